//! Expert parallelism and pipeline parallelism (docs/simulator.md, "Expert
//! and pipeline parallelism"): the checks of `--ep` and `--pp`, the weights
//! and KV each GPU then holds, and the step time of an expert-parallel group
//! or a pipeline, built on the roofline's terms.
//!
//! **Expert parallelism** follows vLLM's `--enable-expert-parallel`: the EP
//! size is TP × the data-parallel ranks that share the experts. `--ep N`
//! with `--tp T` groups N / T of the `--dp` ranks; each rank runs attention
//! (and every weight that is not a routed expert) on its own T GPUs for its
//! own sequences, and each of the N GPUs holds E / N whole experts. The ranks
//! of a group step together (every MoE layer is a collective among them),
//! so the model steps the group as one engine, in which each rank schedules
//! its own requests within its own limits (sequences, token budget, its
//! share of the KV blocks), and the step is timed on the ranks' own batches,
//! waiting for the slowest; a prompt's chunk runs whole on its rank. Where
//! the group has several ranks, each MoE layer dispatches every token to
//! the GPUs of its top-k experts and combines the results back (two
//! all-to-alls); with one rank (`--ep` = `--tp`) every GPU already holds
//! every token after attention's all-reduce, runs its own experts on the
//! tokens routed to them, and the tensor-parallel all-reduce after the MLP
//! sums the results, as vLLM does (its all-to-all kernels run only with
//! more than one data-parallel rank), so no all-to-all is charged. Each
//! MoE layer waits for
//! the busiest GPU: with tokens routed uniformly at random, a GPU's share of
//! the assignments is binomial, and the expected largest of N such shares is
//! the mean plus σ times the expected largest of N standard normals (Blom's
//! approximation). The expert weights a step reads are the busiest GPU's
//! too: the expected largest number of distinct experts a batch's tokens
//! touch on any one GPU ([`busiest_gpu_experts`]), not the mean (top-8 of
//! 256 over 8 GPUs: 2.56 experts for one token against a mean of 1).
//!
//! **Pipeline parallelism** splits the layers over `--pp` stages. vLLM keeps
//! `pp` micro-batches in flight: a step's batch is cut into
//! m = min(pp, its sequences) equal micro-batches, each passes the stages
//! one after another, and the pipeline stays full across steps, so a step
//! lasts the slowest stage's m passes, or one micro-batch's trip (the whole
//! model's time for it plus the activation hand-offs) where that is longer.
//! A stage takes its share of the layers' time, and the last the LM head's
//! besides, so with m near pp the last stage sets the step.
//! With one sequence (m = 1) the step takes every stage in turn: the same
//! time as one GPU group plus the hand-offs, the other stages idle (the
//! bubble); with pp or more sequences every stage is busy. A prompt's chunk
//! passes the stages whole, in one micro-batch: each stage passes it once
//! and the others once, so the step lasts its stage time and m − 1 of the
//! others', and its sequence gets its output when its trip through every
//! stage ends, after the step (`Parallel::chunk_late`; the scheduler holds
//! the request out of the steps until then).

use super::{Roofline, Terms};
use crate::engine::config::EngineConfig;
use crate::engine::error::Error;
use crate::engine::Disaggregation;
use goodput_core::doc::config::{dp_attention_share, ep_ranks};

/// A collective that leaves the NVLink domain costs this much more than one
/// within it: an assumption of the model, of the size DeepEP's low-latency
/// kernels show over RDMA (tens of µs for a decode batch on 8 to 32 ranks).
pub(super) const NETWORK_LATENCY_US: f64 = 30.0;

/// Bytes of one activation element sent between GPUs (BF16).
const ACTIVATION_BYTES: f64 = 2.0;

impl EngineConfig {
    /// The data-parallel ranks that share one set of experts (EP / TP), 1
    /// without expert parallelism: stepped together as one engine, each
    /// scheduling its own requests.
    pub fn attention_ranks(&self) -> u32 {
        ep_ranks(self.tp, self.ep)
    }

    /// The configuration each attention rank's scheduler runs with (what
    /// [`crate::engine::Engine::new`] takes). SGLang's DP attention (its
    /// scheduler over several attention ranks) reads the group's
    /// `--chunked-prefill-size` and `--max-running-requests` (here
    /// `max_num_batched_tokens` and `max_num_seqs`) for the whole group and
    /// gives each rank its share, `// dp_size`, and takes its
    /// `--schedule-conservativeness` times 0.3 (`ServerArgs`'
    /// `_handle_data_parallelism`, the workers' `max_running_requests //
    /// dp_size`); a prompt taken whole (chunked prefill off, SGLang's -1)
    /// stays whole. Any other: as given.
    pub fn rank_config(&self) -> EngineConfig {
        let ranks = self.attention_ranks();
        if self.scheduler != crate::engine::SchedulerPolicy::Sglang || ranks <= 1 {
            return self.clone();
        }
        let mut c = self.clone();
        // The memory share SGLang sets from the group's own limits.
        c.gpu_memory_utilization = Some(self.memory_share());
        if c.enable_chunked_prefill {
            c.max_num_batched_tokens = dp_attention_share(c.max_num_batched_tokens, ranks);
        }
        c.max_num_seqs = c.max_num_seqs.map(|n| dp_attention_share(n, ranks));
        c.schedule_conservativeness *= crate::engine::scheduler::SGLANG_DP_ATTENTION_CONSERVATIVENESS;
        c
    }

    /// The sequences a group runs at once at most: each attention rank's
    /// cap ([`rank_config`](Self::rank_config)'s) times its ranks.
    pub fn group_max_num_seqs(&self) -> u32 {
        self.rank_config().resolved_max_num_seqs().saturating_mul(self.attention_ranks())
    }

    /// The tokens one step may schedule: `max_num_batched_tokens` for each
    /// attention rank (each has its own budget) and each pipeline
    /// micro-batch (vLLM schedules a batch of its full budget for each of
    /// the `pp` in flight, and the engine's step holds them all); one
    /// sequence's chunk still takes at most `max_num_batched_tokens`.
    pub fn step_token_budget(&self) -> u32 {
        self.max_num_batched_tokens.saturating_mul(self.attention_ranks()).saturating_mul(self.pp.max(1))
    }

    /// The share of the model's layers (and so of a token's KV) on one
    /// pipeline stage: the largest stage's, 1 without pipeline parallelism.
    pub fn stage_share(&self) -> f64 {
        let layers = self.model.num_layers.max(1);
        layers.div_ceil(self.pp.max(1)) as f64 / layers as f64
    }

    /// The tensor-parallel size of one pool's instances (`decode`: the decode
    /// pool's): the pool's own where `--pd` names it (`4xTP1:1xTP4`), else
    /// `--tp`; `--tp` when not disaggregated.
    pub fn pool_tp(&self, decode: bool) -> u32 {
        let own = self.pd.and_then(|pd| if decode { pd.decode_tp } else { pd.prefill_tp });
        own.unwrap_or(self.tp)
    }

    /// The expert-parallel size of one pool's instances: the pool's own
    /// where `--pd` names it (`1xEP8:1xEP16`), else `--ep`.
    pub fn pool_ep(&self, decode: bool) -> u32 {
        let own = self.pd.and_then(|pd| if decode { pd.decode_ep } else { pd.prefill_ep });
        own.unwrap_or(self.ep)
    }

    /// The configuration one instance of a pool runs (`decode`: the decode
    /// pool's): this one, on that pool's tensor- and expert-parallel sizes
    /// (its pools then name no sizes of their own).
    pub fn pool(&self, decode: bool) -> EngineConfig {
        let pd = self.pd.map(|pd| crate::engine::Disaggregation {
            prefill_tp: None,
            decode_tp: None,
            prefill_ep: None,
            decode_ep: None,
            ..pd
        });
        let (tp, ep) = (self.pool_tp(decode), self.pool_ep(decode));
        // The pool's own `--load-balance-method`: the decode pool's where it
        // has one; one method for both applies where a pool has ranks.
        let load_balance = match (decode, self.decode_load_balance) {
            (true, Some(m)) => m,
            (_, Some(_)) => self.load_balance,
            (_, None) if ep_ranks(tp, ep) <= 1 => crate::engine::LoadBalance::Auto,
            (_, None) => self.load_balance,
        };
        let mut pool = EngineConfig { tp, ep, pd, load_balance, decode_load_balance: None, ..self.clone() };
        // TensorRT-LLM's prefill (context) servers run without the overlap
        // scheduler, as its disaggregated examples and plan's scripts start
        // them (`disable_overlap_scheduler: true`).
        if pool.scheduler == crate::engine::SchedulerPolicy::Trtllm && self.pd.is_some() && !decode {
            pool.async_scheduling = false;
        }
        // SGLang sets a disaggregated instance's default memory share by
        // its role.
        if pool.scheduler == crate::engine::SchedulerPolicy::Sglang
            && self.pd.is_some()
            && pool.gpu_memory_utilization.is_none()
        {
            pool.gpu_memory_utilization =
                Some(crate::engine::config::sglang_role_mem_fraction_static(&pool, Some(decode)));
        }
        pool
    }

    /// Each engine's configuration, in [`EngineConfig::engines`]' order: the
    /// prefill instances' then the decode instances' when disaggregated.
    pub fn engine_configs(&self) -> Vec<EngineConfig> {
        let prefill = self.pd.map_or(0, |pd| pd.prefill as usize);
        let (p, d) = (self.pool(false), self.pool(true));
        (0..self.engines() as usize).map(|i| if i < prefill { p.clone() } else { d.clone() }).collect()
    }

    /// Every data-parallel rank the configuration runs: `--dp`, or both
    /// pools' instances times each one's ranks when disaggregated (an
    /// expert-parallel instance has EP / TP, at its pool's sizes). GPUs =
    /// TP × PP × these where the pools' TPs are the same.
    pub fn all_ranks(&self) -> u32 {
        match self.pd {
            Some(pd) => self
                .pool_sizes(pd)
                .iter()
                .map(|&(n, tp, ep)| n.saturating_mul(ep_ranks(tp, ep)))
                .fold(0, u32::saturating_add),
            None => self.dp,
        }
    }

    /// The prefill pool's and the decode pool's (instances, TP, EP), each
    /// pool on its own sizes where `--pd` names them, else on `--tp` and
    /// `--ep` ([`Disaggregation::pools`]).
    pub(crate) fn pool_sizes(&self, pd: Disaggregation) -> [(u32, u32, u32); 2] {
        pd.pools(self.tp, self.ep)
    }

    /// The engines (schedulers) the configuration runs: one per data-parallel
    /// rank, or per expert-parallel group of ranks, or per instance of the
    /// prefill and decode pools.
    pub fn engines(&self) -> u32 {
        if let Some(pd) = self.pd {
            // Disaggregated: the prefill instances, then the decode ones.
            return pd.instances().max(1);
        }
        (self.dp / self.attention_ranks()).max(1)
    }

    /// How a line that says where the engine runs names its expert and
    /// pipeline parallelism: `EP 8 over 8 ranks · ` or `2 stages of `
    /// (before `{tp}× {gpu}`); empty with neither. Data-parallel ranks that
    /// share expert-parallel groups are told `each rank `, before the
    /// stages: the GPUs named next are a rank's (a served engine's banner
    /// had read "… EP 4 … · 2× H100" for four GPUs).
    pub fn parallel_words(&self) -> String {
        let mut s = String::new();
        // Pools of their own EP sizes: the pools' words name them.
        if self.ep > 1 && !self.pd.is_some_and(|pd| pd.names_sizes()) {
            s += &format!(
                "EP {} (experts over {} GPUs, {} ranks stepped together) · ",
                self.ep,
                self.ep,
                self.attention_ranks()
            );
        }
        if self.pd.is_none() && self.dp > 1 && self.engines() != self.dp {
            s += "each rank ";
        }
        if self.pp > 1 {
            s += &format!("{} stages of ", self.pp);
        }
        s
    }

    /// The engine server's `goodput_engine_parallel_info` gauge (1, its
    /// labels the layout) where EP or PP is on; empty otherwise. vLLM exports
    /// no metric of its parallel layout, so the name is goodput's own.
    pub fn parallel_info_metric(&self) -> String {
        let split_tp = self.pd.is_some_and(|pd| pd.split_tp(self.tp));
        let split_ep = self.pd.is_some_and(|pd| pd.split_ep(self.ep));
        if self.pool_ep(false) <= 1 && self.pp <= 1 && !split_tp && !split_ep {
            return String::new();
        }
        let name = "goodput_engine_parallel_info";
        // Pools of their own sizes: the decode pool's too.
        let mut decode_labels = String::new();
        if split_tp {
            decode_labels += &format!(",decode_tp=\"{}\"", self.pool_tp(true));
        }
        if split_ep {
            let d = self.pool(true);
            decode_labels += &format!(",decode_ep=\"{}\",decode_ranks=\"{}\"", d.ep, d.attention_ranks());
        }
        format!(
            "# HELP {name} The simulated engine's parallel layout (GPUs = tp × pp × dp, dp being both pools' \
             instances times their ranks when prefill and decode are disaggregated; with decode_tp, the decode pool's \
             own TP, tp is the prefill pool's; ep: GPUs the experts are spread over; ranks: data-parallel ranks a \
             scheduler drives; decode_ep and decode_ranks: the decode pool's where they differ, ep and ranks then \
             the prefill pool's).\n# TYPE {name} gauge\n\
             {name}{{tp=\"{}\",pp=\"{}\",dp=\"{}\",ep=\"{}\",ranks=\"{}\"{decode_labels}}} 1\n",
            self.pool_tp(false),
            self.pp,
            self.all_ranks(),
            self.pool_ep(false),
            self.pool(false).attention_ranks()
        )
    }

    /// The checks of `--ep` and `--pp`, each refusal with its fix.
    pub(crate) fn validate_parallel(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidConfig(m));
        let m = &self.model;
        if self.pp == 0 {
            return bad("--pp must be at least 1".into());
        }
        if self.pp > m.num_layers {
            return bad(format!(
                "--pp {} exceeds {}'s {} layers: each pipeline stage needs at least one; use --pp {} or fewer \
                 (2, 4 or 8 are usual), or --tp for more GPUs per stage",
                self.pp, m.name, m.num_layers, m.num_layers
            ));
        }
        if let Some(pd) = self.pd.filter(|pd| pd.names_sizes()) {
            // Each pool at its own sizes, a refusal naming the pool.
            for (decode, which) in [(false, "prefill"), (true, "decode")] {
                let pool = self.pool(decode);
                pool.validate_parallel().map_err(|e| match e {
                    Error::InvalidConfig(m) => Error::InvalidConfig(format!(
                        "--pd {}: the {which} pool (TP {}, EP {}): {m}",
                        pd.spec(),
                        pool.tp,
                        pool.ep
                    )),
                    other => other,
                })?;
            }
            return Ok(());
        }
        if self.ep == 0 {
            return bad("--ep must be at least 1 (1: no expert parallelism)".into());
        }
        if self.ep == 1 {
            return Ok(());
        }
        let Some(moe) = m.moe else {
            return bad(format!(
                "--ep {}: {} is a dense model, with no experts to spread; drop --ep (use --tp, --pp or --dp), or \
                 pick a mixture of experts such as qwen3-30b-a3b, qwen3-235b-a22b or mixtral-8x7b",
                self.ep, m.name
            ));
        };
        let tp = self.tp.max(1);
        if !self.ep.is_multiple_of(tp) {
            return bad(format!(
                "--ep {} is not a multiple of --tp {tp}: the experts spread over the TP GPUs of every data-parallel \
                 rank that shares them (vLLM's EP size = TP × DP ranks); use --ep {tp} or {}",
                self.ep,
                2 * tp
            ));
        }
        let ranks = self.ep / tp;
        // Disaggregated, each pool's instance is one expert-parallel group
        // of these ranks (and --dp is refused).
        if self.pd.is_none() && !self.dp.is_multiple_of(ranks) {
            return bad(format!(
                "--ep {} with --tp {tp} spans {ranks} data-parallel ranks, but --dp {} is not a multiple of {ranks}; \
                 use --dp {ranks} (or a multiple), or --ep {}",
                self.ep,
                self.dp,
                tp * self.dp
            ));
        }
        if !moe.num_experts.is_multiple_of(self.ep) {
            let fits: Vec<String> = (1..=moe.num_experts)
                .filter(|&e| e > 1 && moe.num_experts.is_multiple_of(e) && e.is_multiple_of(tp))
                .take(6)
                .map(|e| e.to_string())
                .collect();
            return bad(format!(
                "--ep {} does not divide {}'s {} experts, so the GPUs cannot hold equal shares; use a divisor such \
                 as {}",
                self.ep,
                m.name,
                moe.num_experts,
                if fits.is_empty() { "1".into() } else { fits.join(", ") }
            ));
        }
        Ok(())
    }
}

/// Weight bytes each GPU holds and KV bytes per token it keeps, for the
/// sizing of the cache: the weights that are not routed experts split over
/// TP, the experts over EP (TP when EP is 1), and both, with the KV cache's
/// layers, over the pipeline's stages (the largest stage's share of layers).
pub(super) fn per_gpu(cfg: &EngineConfig, weight_bytes: f64, kv_bytes_per_token: f64) -> (f64, f64) {
    if cfg.ep <= 1 && cfg.pp <= 1 {
        return (weight_bytes / cfg.tp as f64, kv_bytes_per_token);
    }
    let served = cfg.served_model();
    let m = served.as_ref();
    // The routed experts; shared experts and dense layers are split by TP
    // with the attention.
    let experts = match m.moe {
        Some(moe) => m.expert_params_all_layers() as f64 * cfg.precision.bytes_per_weight() * moe.num_experts as f64,
        None => 0.0,
    };
    let spread = cfg.ep.max(cfg.tp) as f64;
    let replica = (weight_bytes - experts) / cfg.tp as f64 + experts / spread;
    if cfg.pp <= 1 {
        return (replica, kv_bytes_per_token);
    }
    (heaviest_stage(cfg, spread), kv_bytes_per_token * cfg.stage_share())
}

/// The layers of each of `pp` pipeline stages, as vLLM's `get_pp_indices`
/// deals them: an equal share each, the remainder one more to each stage
/// before the last, from the last but one back (the last stage holds the LM
/// head).
fn stage_layers(layers: u32, pp: u32) -> Vec<u32> {
    let pp = pp.max(1);
    let mut counts = vec![layers / pp; pp as usize];
    for k in 0..(layers % pp) as usize {
        let at = counts.len() - 2 - k;
        counts[at] += 1;
    }
    counts
}

/// The weight bytes per GPU of a pipeline's heaviest stage. Layers are
/// dealt out as vLLM's `get_pp_indices` deals them (an equal share each,
/// the remainder one more to each stage before the last, from the last
/// but one back), the input embedding on the first stage and the LM head on
/// the last, and a mixture of experts' dense layers where the model places
/// them ([`ModelSpec::dense_mlp_layers_in`]): DeepSeek's first three,
/// Llama 4 Maverick's every other layer. A stage had been taken to
/// hold its share of the whole model, as if every layer weighed the same:
/// a model whose first 30 of 61 layers are dense had "fit" two stages
/// whose second held 30 layers of experts. And the dense layers had been
/// taken to be the first ones in every model: Maverick's two stages were
/// sized as 24 dense layers and 24 of experts, where each holds 12 of each.
///
/// [`ModelSpec::dense_mlp_layers_in`]: crate::engine::ModelSpec::dense_mlp_layers_in
fn heaviest_stage(cfg: &EngineConfig, spread: f64) -> f64 {
    let served = cfg.served_model();
    let m = served.as_ref();
    let (b, tp) = (m.non_expert_bytes_per_weight(cfg.precision), cfg.tp as f64);
    let d = m.hidden_size as f64;
    let attention = m.attention_params_per_layer() as f64 * b / tp;
    let (dense_mlp, moe_mlp) = match m.moe {
        None => (m.mlp_params_per_expert() as f64 * b / tp, 0.0),
        Some(moe) => {
            let e = moe.num_experts as f64;
            let routed = e * m.mlp_params_per_expert() as f64 * cfg.precision.bytes_per_weight() / spread;
            let always = (d * e + m.shared_expert_params_per_layer() as f64) * b / tp;
            (m.dense_mlp_params_per_layer() as f64 * b / tp, routed + always)
        }
    };
    // A table of the vocabulary, 16-bit, split over TP; with tied
    // embeddings the last stage holds its own copy for the LM head.
    let table = m.vocab_size as f64 * d * 2.0 / tp;
    let counts = stage_layers(m.num_layers, cfg.pp);
    let mut first = 0;
    let mut heaviest: f64 = 0.0;
    for (s, &n) in counts.iter().enumerate() {
        let dense = if m.moe.is_some() { m.dense_mlp_layers_in(first..first + n) } else { n };
        let mut bytes = n as f64 * attention + dense as f64 * dense_mlp + (n - dense) as f64 * moe_mlp;
        if s == 0 {
            bytes += table;
        }
        if s + 1 == counts.len() {
            bytes += table;
        }
        heaviest = heaviest.max(bytes);
        first += n;
    }
    heaviest
}

/// For a mixture of experts that does not fit: the smallest expert-parallel
/// group that does (`--ep N`, with `--dp` raised to its ranks when needed).
pub(super) fn suggest_ep(cfg: &EngineConfig, fits: &dyn Fn(&EngineConfig) -> bool) -> Option<String> {
    cfg.model.moe?;
    let tp = cfg.tp.max(1);
    [2, 4, 8, 16, 32, 64].into_iter().map(|g| tp * g).filter(|&ep| ep > cfg.ep).find_map(|ep| {
        let mut c = cfg.clone();
        c.ep = ep;
        let ranks = ep / tp;
        if !c.dp.is_multiple_of(ranks) {
            c.dp = ranks;
        }
        fits(&c).then(|| if c.dp == cfg.dp { format!("--ep {ep}") } else { format!("--ep {ep} --dp {}", c.dp) })
    })
}

/// One attention rank's part of a step's batch, in [`BatchShape`]'s terms:
/// a rank's own where the engine counted them, or the busiest rank's share
/// of a batch spread evenly ([`Parallel::even_rank`]), fractional there.
#[derive(Debug, Clone, Copy, Default)]
struct RankPart {
    tokens: f64,
    seqs: f64,
    prefill_tokens: f64,
    largest_prefill: f64,
    decode_context: f64,
    prefill_context: f64,
    prefill_attention: f64,
}

impl RankPart {
    fn of(b: &super::BatchShape) -> RankPart {
        let a = b.attended();
        RankPart {
            tokens: b.tokens as f64,
            seqs: b.seqs as f64,
            prefill_tokens: b.prefill_tokens as f64,
            largest_prefill: b.largest_prefill as f64,
            decode_context: a.decode_context,
            prefill_context: a.prefill_context,
            prefill_attention: a.prefill_attention,
        }
    }

    /// Its decodes (one token each).
    fn decodes(&self) -> f64 {
        (self.tokens - self.prefill_tokens).max(0.0)
    }
}

/// A rank's part cut over its micro-batches: their count, the rank's
/// prefill tokens, an even micro-batch's share of them and the heavy one's
/// (the largest chunk whole), each micro-batch's share of the rank's
/// decode work and of its sequences.
struct Shares {
    micro: f64,
    prefill: f64,
    fp_even: f64,
    fp_heavy: f64,
    fd: f64,
    part: f64,
}

/// The step-time model of an expert-parallel group or a pipeline: the
/// configuration's products folded in, as the roofline's are.
#[derive(Debug, Clone)]
pub(super) struct Parallel {
    pp: f64,
    /// Each stage's share of the layers (vLLM's split, [`stage_layers`]);
    /// the last stage also holds the LM head.
    stages: Vec<f64>,
    /// Data-parallel ranks in the group (EP / TP, or 1).
    ranks: f64,
    /// The expert-parallel path (EP > 1): the experts apart from the rest.
    ep: Option<ExpertParallel>,
    /// One hand-off between stages: latency, and bytes per token per GPU
    /// over the link's rate.
    handoff_latency: f64,
    handoff_s_per_token: f64,
}

#[derive(Debug, Clone)]
struct ExpertParallel {
    ep: f64,
    k: f64,
    /// 1 − k/E: the chance a token misses a given expert.
    miss: f64,
    /// The expected largest number of distinct experts one GPU holds of
    /// those a batch of B tokens touches, for B = 0, 1, … until it is
    /// within 10⁻⁶ of all E / EP ([`busiest_gpu_experts`]); `None` past the
    /// experts it is computed for, where the mean stands in.
    busiest: Option<std::sync::Arc<[f64]>>,
    /// E / EP experts on each GPU.
    experts_per_gpu: f64,
    /// 2 · k · (one routed expert's parameters) · (MoE layers): the routed
    /// experts' share of a token's flops (the shared experts' stay with the
    /// rank's own TP GPUs).
    expert_flops_per_token: f64,
    /// One GPU's peak · η_c and BW · η_w.
    gpu_compute_rate: f64,
    gpu_weight_rate: f64,
    /// The activation bytes a routed (token, expert) pair moves through the
    /// memory of the GPU that holds the expert, over all MoE layers
    /// (`moe_activation_traffic`; the experts whole, not split by TP).
    act_bytes_per_pair: f64,
    /// Two all-to-alls per MoE layer where the group has more than one
    /// rank (none with one: the tensor-parallel all-reduce combines the
    /// experts' results): their count, latency, and seconds per token a
    /// rank sends.
    a2a_calls: f64,
    a2a_latency: f64,
    a2a_s_per_token: f64,
    /// The expected largest of EP standard normals.
    z_max: f64,
    /// Off only in tests: every GPU gets the mean share.
    imbalance: bool,
}

impl Parallel {
    /// `None` where EP and PP are 1: the roofline's own path, unchanged.
    pub(super) fn new(cfg: &EngineConfig, peak: f64) -> Option<Parallel> {
        if cfg.ep <= 1 && cfg.pp <= 1 {
            return None;
        }
        let served = cfg.served_model();
        let m = served.as_ref();
        let c = &cfg.calibration;
        let tp = cfg.tp.max(1) as f64;
        let d = m.hidden_size as f64;
        let domain = cfg.gpu.nvlink_domain;
        let nvlink = cfg.gpu.interconnect_bytes_per_s() * c.eta_link;
        let network = cfg.gpu.network_bytes_per_s() * c.eta_link;
        let link = |gpus: u32| {
            if gpus <= domain {
                (c.allreduce_latency_us * 1e-6, nvlink)
            } else {
                ((c.allreduce_latency_us + NETWORK_LATENCY_US) * 1e-6, network.min(nvlink))
            }
        };
        let ranks = cfg.attention_ranks();
        let ep = match m.moe {
            Some(moe) if cfg.ep > 1 => {
                let ep = cfg.ep as f64;
                let k = moe.experts_per_token as f64;
                let (lat, rate) = link(cfg.ep);
                Some(ExpertParallel {
                    ep,
                    k,
                    miss: 1.0 - k / moe.num_experts as f64,
                    busiest: busiest_gpu_experts(moe.num_experts, moe.experts_per_token, cfg.ep).map(Into::into),
                    experts_per_gpu: moe.num_experts as f64 / ep,
                    expert_flops_per_token: 2.0 * k * m.expert_params_all_layers() as f64,
                    gpu_compute_rate: peak * c.eta_compute,
                    gpu_weight_rate: cfg.gpu.bandwidth_bytes_per_s() * c.eta_weights,
                    act_bytes_per_pair: cfg.moe_activation_bytes_per_pair(1.0),
                    // vLLM's all-to-all kernels run only where EP spans
                    // data-parallel ranks (`use_all2all_kernels`: DP > 1
                    // with EP). With one rank (EP = TP) every GPU holds
                    // every token after attention's all-reduce; the
                    // all-reduce after the MLP, charged as TP's, sums
                    // the experts' outputs.
                    a2a_calls: if ranks > 1 { 2.0 * m.moe_layers() as f64 } else { 0.0 },
                    a2a_latency: lat,
                    // A rank's tokens are split over its TP GPUs, each sent to
                    // k experts, (EP − 1)/EP of them on another GPU.
                    a2a_s_per_token: k * d * ACTIVATION_BYTES * (ep - 1.0) / ep / tp / rate,
                    z_max: expected_max_normal(cfg.ep),
                    imbalance: true,
                })
            }
            _ => None,
        };
        let (handoff_latency, rate) = link(cfg.tp * cfg.pp * ranks);
        let layers = f64::from(m.num_layers.max(1));
        Some(Parallel {
            pp: cfg.pp as f64,
            stages: stage_layers(m.num_layers, cfg.pp).into_iter().map(|n| f64::from(n) / layers).collect(),
            ranks: ranks as f64,
            ep,
            handoff_latency,
            handoff_s_per_token: d * ACTIVATION_BYTES / tp / rate,
        })
    }

    /// Every GPU gets the mean share of the routed tokens (tests only).
    #[cfg(test)]
    pub(super) fn balanced(&mut self) {
        if let Some(ep) = &mut self.ep {
            ep.imbalance = false;
        }
    }

    /// The distinct experts whose weights the busiest GPU reads for a
    /// micro-batch of `tokens`: the expected largest number any one GPU
    /// holds of those the tokens touch (interpolated between whole
    /// numbers of tokens), or the mean, E / EP · (1 − (1 − k/E)^B), where
    /// every GPU is given the mean share (tests) or E is past the table.
    fn experts_read(ep: &ExpertParallel, tokens: f64) -> f64 {
        let mean = ep.experts_per_gpu * (1.0 - ep.miss.powf(tokens));
        let Some(table) = ep.busiest.as_deref().filter(|_| ep.imbalance) else {
            return mean;
        };
        if tokens <= 0.0 {
            return 0.0;
        }
        let i = tokens.floor() as usize;
        match (table.get(i), table.get(i + 1)) {
            (Some(&a), Some(&b)) => a + (b - a) * (tokens - i as f64),
            // Past the table: every expert of the busiest GPU, to 10⁻⁶.
            _ => ep.experts_per_gpu,
        }
    }

    /// The busiest GPU's share of `assignments` token-expert pairs against
    /// the mean: 1 + z_max · σ/μ of a binomial share of 1/EP, at most EP.
    fn imbalance(ep: &ExpertParallel, assignments: f64) -> f64 {
        if !ep.imbalance || assignments <= 0.0 {
            return 1.0;
        }
        (1.0 + ep.z_max * ((ep.ep - 1.0) / assignments).sqrt()).min(ep.ep)
    }

    /// One step of `b`'s batch: the terms of one micro-batch on the busiest rank,
    /// times the stage times the step lasts; the compute and memory seconds
    /// are one GPU's busy time over the step. `ranks`: each attention rank's
    /// part of the batch, where the engine counted them (the ranks step
    /// together: the slowest sets the step); without them, the busiest
    /// rank's share of a batch spread evenly.
    pub(super) fn split(&self, r: &Roofline, b: &super::BatchShape, ranks: Option<&[super::BatchShape]>) -> Terms {
        if b.tokens == 0 {
            return Terms::default();
        }
        match ranks.filter(|rs| rs.len() > 1) {
            Some(rs) => rs
                .iter()
                .filter(|s| s.tokens > 0)
                .map(|s| self.split_rank(r, b, &RankPart::of(s)))
                .max_by(|x, y| x.total().total_cmp(&y.total()))
                .unwrap_or_default(),
            None => self.split_rank(r, b, &self.even_rank(b)),
        }
    }

    /// The busiest rank's part of `b` spread evenly over the ranks: ⌈B /
    /// ranks⌉ of the B sequences (a lone sequence is all on one rank). A
    /// prefill chunk runs whole on its request's rank: the busiest holds
    /// ⌈k / ranks⌉ of the k chunks, and at least the largest (a lone prompt
    /// among decodes holds the whole group's step while the other ranks
    /// wait), and decodes for the rest of its sequences; its shares of the
    /// prefill and decode work (their tokens and context) follow. With one
    /// rank, the whole batch.
    fn even_rank(&self, b: &super::BatchShape) -> RankPart {
        let seqs = b.seqs.max(1) as f64;
        let rank_seqs = (seqs / self.ranks).ceil();
        let (k, prefill) = (b.prefills as f64, b.prefill_tokens as f64);
        let rank_prefills = (k / self.ranks).ceil().min(rank_seqs);
        let rank_prefill =
            if prefill > 0.0 { (b.largest_prefill as f64).max(rank_prefills / k * prefill).min(prefill) } else { 0.0 };
        let decodes = seqs - k;
        let rank_decodes = if decodes > 0.0 { (rank_seqs - rank_prefills).max(0.0).min(decodes) } else { 0.0 };
        let fp = if prefill > 0.0 { rank_prefill / prefill } else { 0.0 };
        let fd = if decodes > 0.0 { rank_decodes / decodes } else { 0.0 };
        let a = b.attended();
        RankPart {
            tokens: rank_prefill + (b.tokens as f64 - prefill) * fd,
            seqs: rank_seqs,
            prefill_tokens: rank_prefill,
            largest_prefill: b.largest_prefill as f64,
            decode_context: a.decode_context * fd,
            prefill_context: a.prefill_context * fp,
            prefill_attention: a.prefill_attention * fp,
        }
    }

    /// [`split`](Self::split) with the part `p` on the busiest rank: its
    /// micro-batch, 1/m of it, sets the stage time.
    fn split_rank(&self, r: &Roofline, b: &super::BatchShape, p: &RankPart) -> Terms {
        let Shares { micro, prefill, fp_even, fp_heavy, fd, part } = self.shares(p);
        let (even, even_head) = self.micro_batch(r, b, p, fp_even, fd, part, micro, 0.0);
        // Each stage passes each of the m micro-batches once a step, and a
        // micro-batch goes again only when its trip through every stage has
        // ended: the step lasts the slowest stage's m passes, or one trip if
        // that is longer. With stages of equal time (a stage being 1/pp of a
        // micro-batch's trip) and m ≤ pp that is the trip; the LM head on
        // the last stage, and a remainder of layers, make one stage slower.
        let busy = micro / self.pp;
        let trip = even.total();
        // One stage (expert parallelism alone) is the trip itself.
        let stages = if trip > 0.0 && self.pp > 1.0 {
            (micro * self.slowest_stage(trip, even_head) / trip).max(1.0)
        } else {
            1.0
        };
        let mut out = even.scaled(stages);
        if fp_heavy > fp_even {
            // The micro-batch that holds the largest chunk whole, and the
            // m − 1 others, which share the rest of the rank's chunks. Each
            // stage passes the heavy one once and the others once a step, so
            // the step lasts the heavy one's stage time and m − 1 of the
            // others' (and no less than one of the others' whole trip, before
            // which none of them can go again). The heavy one's chunk reaches
            // the last stage only after every stage has computed it: its
            // sequence gets its output that long after the step started,
            // later than the others ([`chunk_late`](Self::chunk_late)), and
            // sits out the steps until then (the scheduler's `late`).
            let extra = (fp_heavy - fp_even) * prefill;
            let (heavy, heavy_head) = self.micro_batch(r, b, p, fp_heavy, fd, part, micro, extra);
            let rank = fp_even * micro * prefill;
            let fp_rest = ((rank - fp_heavy * prefill).max(0.0) / (micro - 1.0)) / prefill;
            let (rest, rest_head) = self.micro_batch(r, b, p, fp_rest, fd, part, micro, (fp_rest - fp_even) * prefill);
            // The slowest stage's passes of them all.
            let round = rest.scaled((micro - 1.0) / self.pp).plus(&heavy.scaled(1.0 / self.pp));
            let (work, head) = (round.total() * self.pp, (micro - 1.0) * rest_head + heavy_head);
            let round = if work > 0.0 { round.scaled(self.slowest_stage(work, head) * self.pp / work) } else { round };
            out = if round.total() > rest.total() { round } else { rest };
            out.compute_s = (heavy.compute_s + (micro - 1.0) * rest.compute_s) / self.pp;
            out.memory_s = (heavy.memory_s + (micro - 1.0) * rest.memory_s) / self.pp;
            return out;
        }
        // A GPU's busy time is its share of the whole step's work, however
        // the micro-batches wait for each other.
        out.compute_s = even.compute_s * busy;
        out.memory_s = even.memory_s * busy;
        out
    }

    /// How a rank's part is cut over its micro-batches (see
    /// [`split`](Self::split)).
    fn shares(&self, p: &RankPart) -> Shares {
        let micro = self.pp.min(p.seqs.max(1.0));
        let prefill = p.prefill_tokens;
        // A micro-batch's share of the rank's prefill tokens: an even 1/m,
        // or, in the micro-batch that holds it, the largest chunk whole (a
        // sequence's chunk passes the stages in one micro-batch; it is not
        // cut over them).
        let (fp_even, fp_heavy) = if prefill > 0.0 {
            let even = prefill / micro;
            (1.0 / micro, even.max(p.largest_prefill).min(prefill) / prefill)
        } else {
            (0.0, 0.0)
        };
        let fd = if p.decodes() > 0.0 { 1.0 / micro } else { 0.0 };
        // The share of the rank's sequences, for the per-sequence terms.
        Shares { micro, prefill, fp_even, fp_heavy, fd, part: 1.0 / micro }
    }

    /// Seconds after a step of `step_s` ends at which a chunk of `chunk`
    /// tokens in it gets its output: its micro-batch's trip through every
    /// stage, the chunk whole and its share of the decodes beside it, less
    /// the step; 0 where the trip ends within the step (every chunk no
    /// larger than an even micro-batch's share). Each chunk's own, so a
    /// step's second-largest chunk waits for its own trip too.
    /// `rank`: the part of the batch on the chunk's rank, where the engine
    /// counted it (else the busiest rank's even share).
    pub(super) fn chunk_late(
        &self,
        r: &Roofline,
        b: &super::BatchShape,
        rank: Option<&super::BatchShape>,
        chunk: u32,
        step_s: f64,
    ) -> f64 {
        let p = rank.map_or_else(|| self.even_rank(b), RankPart::of);
        let Shares { micro, prefill, fp_even, fd, part, .. } = self.shares(&p);
        let c = f64::from(chunk);
        if prefill <= 0.0 || c <= fp_even * prefill {
            return 0.0;
        }
        let fp = c.min(prefill) / prefill;
        let trip = self.micro_batch(r, b, &p, fp, fd, part, micro, (fp - fp_even) * prefill).0.total();
        (trip - step_s).max(0.0)
    }

    /// The slowest stage's seconds of `work` seconds of trips through every
    /// stage, `head` of them the LM head's: each stage its share of the
    /// layers' part, the last the head besides. The step's overheads and
    /// the hand-offs are taken to spread as the layers do.
    fn slowest_stage(&self, work: f64, head: f64) -> f64 {
        let layers = (work - head).max(0.0);
        let last = self.stages.len().saturating_sub(1);
        self.stages
            .iter()
            .enumerate()
            .map(|(s, share)| layers * share + if s == last { head } else { 0.0 })
            .fold(0.0, f64::max)
    }

    /// The terms of one micro-batch's trip through every stage: `fp` and
    /// `fd` of the rank's part `p` of the prefill and decode work, `part`
    /// of its sequences; the group's micro-batch is 1/m of the step `b`'s
    /// tokens, and `extra` tokens beyond an even micro-batch's (the
    /// expert-parallel group's routed tokens grow by as many). With them, the
    /// LM head's seconds in the trip's matrix products: its flops where
    /// those are compute-bound, its table's bytes where they are
    /// memory-bound.
    #[allow(clippy::too_many_arguments)]
    fn micro_batch(
        &self,
        r: &Roofline,
        b: &super::BatchShape,
        p: &RankPart,
        fp: f64,
        fd: f64,
        part: f64,
        micro: f64,
        extra: f64,
    ) -> (Terms, f64) {
        let (seqs, prefill, decodes) = (p.seqs, p.prefill_tokens, p.decodes());
        let n = prefill * fp + decodes * fd;
        let head = |c: f64, m: f64| {
            if c >= m {
                seqs * part * r.lm_head_s_per_seq
            } else {
                r.lm_head_bytes / r.weight_rate
            }
        };
        let (gemm_c, gemm_m, gemm, a2a, head_s) = match &self.ep {
            None => {
                let (c, m) = (r.gemm_compute_s(n, seqs * part), r.weight_bytes(n) / r.weight_rate);
                (c, m, c.max(m), 0.0, head(c, m))
            }
            Some(ep) => {
                let dense_c = r.gemm_compute_s(n, seqs * part) - r.expert_compute_s(n);
                let dense_m = r.dense_weight_bytes(n) / r.weight_rate;
                // The group's tokens of one micro-batch, routed over its EP GPUs.
                let group = (b.tokens as f64 / micro + extra).max(0.0);
                let assignments = group * ep.k;
                let share = group / ep.ep * Self::imbalance(ep, assignments);
                let expert_c = share * ep.expert_flops_per_token / ep.gpu_compute_rate;
                // The busiest GPU's distinct experts, read once each.
                let expert_m = (Self::experts_read(ep, group) * r.expert_bytes + share * ep.k * ep.act_bytes_per_pair)
                    / ep.gpu_weight_rate;
                let a2a = ep.a2a_calls * (ep.a2a_latency + n * ep.a2a_s_per_token);
                let gemm = dense_c.max(dense_m) + expert_c.max(expert_m);
                (dense_c + expert_c, dense_m + expert_m, gemm, a2a, head(dense_c, dense_m))
            }
        };
        let flops = r.attention_flops(p.prefill_attention * fp, p.decode_context * fd, 1.0);
        let kv_tokens = (p.decode_context + decodes) * fd + (p.prefill_context + prefill) * fp;
        let (att_c, att_m) = (flops / r.attention_rate, kv_tokens * r.kv_bytes_per_token_per_gpu / r.kv_rate);
        let tp = r.allreduce_calls * (r.allreduce_latency + n * r.allreduce_bytes_per_token / r.link_rate);
        let handoffs = (self.pp - 1.0) * (self.handoff_latency + n * self.handoff_s_per_token);
        let overhead = r.fixed_overhead + r.per_seq_overhead * seqs * part;
        let terms = Terms {
            gemm,
            attention: att_c.max(att_m),
            tp: tp + a2a + handoffs,
            overhead,
            compute_s: gemm_c + att_c,
            memory_s: gemm_m + att_m,
        };
        (terms, head_s)
    }
}

/// Most experts [`busiest_gpu_experts`] computes for: past 1,000 the
/// binomial weights its sums take fall below f64's range (2^-E).
const BUSIEST_MAX_EXPERTS: u32 = 1000;

/// The expected largest number of distinct experts any one of `gpus` GPUs
/// holds among those a batch of B tokens touches, for B = 0, 1, …, each
/// token choosing `k` of `experts` at random (uniform, without
/// replacement; tokens independent), each GPU holding m = E / gpus of
/// them. The table ends once it is within 10⁻⁶ of m; `None` for more than
/// [`BUSIEST_MAX_EXPERTS`] experts, or a split that is not whole.
///
/// Exact under that routing. The touched set T is exchangeable over the
/// experts, so given |T| = s it is a uniform s-subset, and
/// E[max] = Σ_s P(|T| = s) · M(s):
///
/// - P(|T| = s) after B tokens is a Markov chain on s: a token adds n new
///   experts with probability C(E − s, n) · C(s, k − n) / C(E, k).
/// - M(s), the expected largest share of a uniform s-subset over the
///   GPUs' equal groups, is Σ_{c<m} (1 − P(every GPU ≤ c | s)), where
///   P(every GPU ≤ c | s) = [t^s] (Σ_{j≤c} C(m, j) t^j)^G / C(E, s). Both
///   sides are scaled by 2^-E (binomial probabilities at ½) so that no
///   term overflows.
pub(super) fn busiest_gpu_experts(experts: u32, k: u32, gpus: u32) -> Option<Vec<f64>> {
    if experts == 0
        || experts > BUSIEST_MAX_EXPERTS
        || gpus == 0
        || !experts.is_multiple_of(gpus)
        || k == 0
        || k > experts
    {
        return None;
    }
    let (e, k, g) = (experts as usize, k as usize, gpus as usize);
    let m = e / g;
    // ln n! for n ≤ E, and the binomial probabilities at ½ of n trials.
    let ln_fact: Vec<f64> = std::iter::once(0.0)
        .chain((1..=e).scan(0.0, |acc, i| {
            *acc += (i as f64).ln();
            Some(*acc)
        }))
        .collect();
    let ln_choose = |n: usize, r: usize| ln_fact[n] - ln_fact[r] - ln_fact[n - r];
    let half = |n: usize, j: usize| (ln_choose(n, j) - n as f64 * std::f64::consts::LN_2).exp();
    let whole: Vec<f64> = (0..=e).map(|s| half(e, s)).collect();
    let group: Vec<f64> = (0..=m).map(|j| half(m, j)).collect();
    // M(s): for each cap c below m, the chance some GPU holds more than c.
    let mut most = vec![0.0; e + 1];
    for c in 0..m {
        let mut poly = vec![1.0];
        for _ in 0..g {
            let mut next = vec![0.0; poly.len() + c];
            for (i, &a) in poly.iter().enumerate() {
                for (j, &b) in group[..=c].iter().enumerate() {
                    next[i + j] += a * b;
                }
            }
            poly = next;
        }
        for (s, m_s) in most.iter_mut().enumerate() {
            let within = poly.get(s).map_or(0.0, |&p| (p / whole[s]).min(1.0));
            *m_s += 1.0 - within;
        }
    }
    // The chain: a token's new experts n, from s touched.
    let ln_all = ln_choose(e, k);
    let step: Vec<f64> = (0..=e)
        .flat_map(|s| {
            (0..=k).map(move |n| {
                if n > e - s || k - n > s {
                    0.0
                } else {
                    (ln_choose(e - s, n) + ln_choose(s, k - n) - ln_all).exp()
                }
            })
        })
        .collect();
    let mut touched = vec![0.0; e + 1];
    touched[0] = 1.0;
    let mut table = vec![0.0];
    // Saturation comes within E · ln(E · 10⁶) / k tokens or so; the cap
    // only bounds the work.
    for _ in 0..100_000 {
        let mut next = vec![0.0; e + 1];
        for (s, &p) in touched.iter().enumerate() {
            if p > 0.0 {
                for (n, &q) in step[s * (k + 1)..(s + 1) * (k + 1)].iter().enumerate() {
                    if q > 0.0 {
                        next[s + n] += p * q;
                    }
                }
            }
        }
        touched = next;
        let value: f64 = touched.iter().zip(&most).map(|(p, m_s)| p * m_s).sum();
        table.push(value.min(m as f64));
        if m as f64 - value < 1e-6 {
            break;
        }
    }
    Some(table)
}

/// E[max of n standard normals] by Blom's approximation,
/// Φ⁻¹((n − 0.375) / (n + 0.25)); 0 for one.
fn expected_max_normal(n: u32) -> f64 {
    if n <= 1 {
        return 0.0;
    }
    let n = n as f64;
    goodput_core::analysis::interval::normal_quantile((n - 0.375) / (n + 0.25))
}

#[cfg(test)]
mod tests {
    use super::super::{kv_capacity, BatchShape, Roofline};
    use super::per_gpu;
    use crate::engine::catalog::{GpuSpec, ModelSpec, Precision};
    use crate::engine::config::EngineConfig;
    use crate::engine::error::Error;
    use crate::engine::virtual_time::{simulate, SimRun, VirtualLoad, VirtualRequest};
    use goodput_core::RequestMetrics;
    use std::time::Duration;

    fn cfg(model: &str, gpu: &str, precision: Precision) -> EngineConfig {
        EngineConfig::from_names(model, gpu, precision).unwrap()
    }

    fn decodes(n: u32, context: u32) -> BatchShape {
        let mut b = BatchShape::default();
        for _ in 0..n {
            b.add_decode(context);
        }
        b
    }

    fn refusal(c: &EngineConfig) -> String {
        match c.validate() {
            Err(Error::InvalidConfig(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn output_throughput(run: &SimRun) -> f64 {
        let tokens: u64 = run.records.iter().map(|r| r.output_tokens).sum();
        tokens as f64 / run.engine.makespan.as_secs_f64()
    }

    fn mean_tpot_ms(run: &SimRun) -> f64 {
        let v: Vec<f64> = run.records.iter().filter_map(|r| r.tpot()).map(|d| d.as_secs_f64() * 1e3).collect();
        v.iter().sum::<f64>() / v.len() as f64
    }

    #[test]
    fn bad_configurations_are_refused_with_the_fix() {
        let mut dense = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        dense.ep = 2;
        dense.dp = 2;
        let m = refusal(&dense);
        assert!(m.contains("dense model") && m.contains("drop --ep") && m.contains("qwen3-30b-a3b"), "{m}");
        let mut deep = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        deep.pp = 33;
        let m = refusal(&deep);
        assert!(m.contains("--pp 33 exceeds") && m.contains("32 layers") && m.contains("--pp 32"), "{m}");
        deep.pp = 0;
        assert!(refusal(&deep).contains("--pp must be at least 1"));
        // Mixtral's 8 experts do not split over 3 GPUs.
        let mut odd = cfg("mixtral-8x7b", "h100", Precision::Bf16);
        odd.ep = 3;
        odd.dp = 3;
        let m = refusal(&odd);
        assert!(m.contains("does not divide") && m.contains("8 experts") && m.contains("2, 4, 8"), "{m}");
        // EP spans whole TP groups, of whole data-parallel ranks.
        let mut moe = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        moe.tp = 2;
        moe.ep = 3;
        assert!(refusal(&moe).contains("not a multiple of --tp 2"));
        moe.ep = 4;
        let m = refusal(&moe);
        assert!(m.contains("spans 2 data-parallel ranks") && m.contains("--dp 2"), "{m}");
        moe.dp = 2;
        assert!(moe.validate().is_ok());
        assert_eq!((moe.attention_ranks(), moe.engines(), moe.gpus()), (2, 1, 4));
    }

    #[test]
    fn expert_parallelism_fits_what_one_gpu_cannot_and_serves_it() {
        // Qwen3-235B-A22B in FP8 (≈ 235 GB) on H100s: eight data-parallel
        // copies of one GPU each cannot hold it; spread the experts over the
        // eight (EP 8) and each GPU holds the shared weights and 16 experts.
        let mut plain = cfg("qwen3-235b-a22b", "h100", Precision::Fp8);
        plain.dp = 8;
        assert!(matches!(kv_capacity(&plain), Err(Error::ModelDoesNotFit { .. })));
        let mut ep = plain.clone();
        ep.ep = 8;
        let cap = kv_capacity(&ep).unwrap();
        assert!(cap.weight_bytes_per_gpu < 40e9 && cap.weight_bytes_per_gpu > 30e9, "{cap:?}");
        // One scheduler for the group, with its eight ranks' caches and limits.
        assert_eq!(ep.engines(), 1);
        let per_rank = (cap.kv_bytes_per_gpu / (cap.kv_bytes_per_token_per_gpu * 16.0)).floor() as u32;
        assert_eq!(cap.num_blocks, 8 * per_rank);
        // At saturation it serves: 256 users of 512 in / 256 out.
        let load = VirtualLoad::closed_loop(vec![VirtualRequest::new(512, 256); 512], 256);
        let run = simulate(&ep, &load).unwrap();
        assert_eq!(run.engine.replicas.len(), 1);
        assert_eq!(run.engine.provisioned_w, 8.0 * ep.gpu.tdp_w);
        // Against the same eight GPUs as one TP-8 replica: EP keeps the
        // attention per rank (8 small batches) and moves tokens, not
        // partial sums; within a factor of two either way at saturation.
        let mut tp8 = cfg("qwen3-235b-a22b", "h100", Precision::Fp8);
        tp8.tp = 8;
        let tp_run = simulate(&tp8, &load).unwrap();
        let ratio = output_throughput(&run) / output_throughput(&tp_run);
        assert!((0.5..2.0).contains(&ratio), "EP 8 / TP 8 throughput: {ratio:.2}");
    }

    #[test]
    fn the_all_to_all_adds_to_each_step_and_grows_with_the_tokens() {
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        c.dp = 8;
        let none = Roofline::new(&c).unwrap();
        c.ep = 8;
        let ep = Roofline::new(&c).unwrap();
        let comm = |b: &BatchShape| ep.breakdown(b).tensor_parallel.as_secs_f64();
        // Two all-to-alls per MoE layer, each at least its latency.
        let floor = 2.0 * 48.0 * c.calibration.allreduce_latency_us * 1e-6;
        let (small, big) = (decodes(8, 100), decodes(1024, 100));
        assert!(comm(&small) >= floor && comm(&small) < floor * 1.2, "{} vs {floor}", comm(&small));
        assert!(comm(&big) > comm(&small) * 1.5, "{} vs {}", comm(&big), comm(&small));
        assert_eq!(none.breakdown(&small).tensor_parallel, Duration::ZERO);
        // Past one NVLink domain the network carries it: slower.
        c.dp = 16;
        c.ep = 16;
        let wide = Roofline::new(&c).unwrap();
        assert!(wide.breakdown(&big).tensor_parallel.as_secs_f64() > comm(&big));
    }

    /// `--ep 8 --tp 8` is vLLM's `--tensor-parallel-size 8
    /// --enable-expert-parallel`: one attention rank, every GPU holding
    /// every token after attention's all-reduce, so no all-to-all (vLLM
    /// runs its kernels only with DP > 1); the all-reduce after the MLP,
    /// as TP's, combines the experts. Its communication is TP 8's, and with
    /// every GPU given the mean share its step is TP 8's but for where the
    /// experts lie. It had been charged 2 × 58 all-to-alls more: TPOT 7.89
    /// ms at one user against TP 8's 6.14. EP across data-parallel ranks
    /// still pays them.
    #[test]
    fn one_attention_rank_runs_no_all_to_all() {
        let mut tp8 = cfg("deepseek-v3", "h200", Precision::Fp8);
        tp8.tp = 8;
        // The experts' activations apart: their traffic differs between a
        // TP split and EP's whole experts (tested in roofline.rs).
        tp8.calibration.moe_activation_traffic = 0.0;
        let mut tp_ep = tp8.clone();
        tp_ep.ep = 8;
        let (a, b) = (Roofline::new(&tp8).unwrap(), Roofline::new(&tp_ep).unwrap());
        assert_eq!(b.parallel.as_ref().unwrap().ep.as_ref().unwrap().a2a_calls, 0.0);
        let mut even = b.clone();
        even.parallel.as_mut().unwrap().balanced();
        let mut prefill = decodes(31, 2000);
        prefill.add_prefill(0, 2048);
        for batch in [decodes(1, 1000), decodes(64, 1000), decodes(512, 1000), prefill] {
            let (x, y) = (a.breakdown(&batch), b.breakdown(&batch));
            // The same all-reduces, nothing more.
            let (tx, ty) = (x.tensor_parallel.as_secs_f64(), y.tensor_parallel.as_secs_f64());
            assert!((ty / tx - 1.0).abs() < 1e-9, "{} seqs: {ty} against {tx}", batch.seqs);
            let (sx, sy) = (a.step_time(&batch).as_secs_f64(), even.step_time(&batch).as_secs_f64());
            // Equal where one side of the roofline bounds both the dense
            // and the expert products (decodes of up to 64 sequences);
            // else no faster, the expert path taking the roofline of each
            // part in turn where TP's takes it of their sum (a prompt's
            // dense products compute-bound, its experts' reads not).
            let bound = if batch.seqs <= 64 && batch.prefills == 0 { 1e-9 } else { 0.15 };
            assert!(sy >= sx * (1.0 - 1e-9) && sy <= sx * (1.0 + bound), "{} seqs: {sy} against {sx}", batch.seqs);
        }
        // In virtual time, at one user: TP 8's TPOT but for the busiest
        // GPU's expert reads. A token's 8 experts are one a GPU on the
        // mean, as TP 8 reads an eighth of each; the busiest GPU holds
        // 2.56 of them on average (`busiest_gpu_experts`).
        let load = VirtualLoad::closed_loop(vec![VirtualRequest::new(1000, 64); 3], 1);
        let (x, y) = (mean_tpot_ms(&simulate(&tp8, &load).unwrap()), mean_tpot_ms(&simulate(&tp_ep, &load).unwrap()));
        let ep = b.parallel.as_ref().unwrap().ep.as_ref().unwrap();
        let extra = (super::Parallel::experts_read(ep, 1.0) - 1.0) * b.expert_bytes / ep.gpu_weight_rate * 1e3;
        assert!(extra > 0.0 && ((y - x) / extra - 1.0).abs() < 0.02, "TPOT {y:.3} ms, TP 8's {x:.3}, reads {extra:.3}");
        // Over data-parallel ranks the tokens move: two all-to-alls a MoE
        // layer, at least their latency each.
        let mut dp = cfg("deepseek-v3", "h200", Precision::Fp8);
        (dp.dp, dp.ep) = (8, 8);
        let r = Roofline::new(&dp).unwrap();
        assert_eq!(r.parallel.as_ref().unwrap().ep.as_ref().unwrap().a2a_calls, 2.0 * 58.0);
        let floor = 2.0 * 58.0 * dp.calibration.allreduce_latency_us * 1e-6;
        assert!(r.breakdown(&decodes(8, 1000)).tensor_parallel.as_secs_f64() >= floor);
        // TP 8 over two ranks (EP 16, two boards of H200): theirs cross the
        // network, dearer than EP 8 over eight ranks of one GPU.
        let mut wide = cfg("deepseek-v3", "h200", Precision::Fp8);
        (wide.tp, wide.dp, wide.ep) = (8, 2, 16);
        let w = Roofline::new(&wide).unwrap();
        let batch = decodes(256, 1000);
        let a2a = |r: &Roofline, c: &EngineConfig| {
            let mut plain = c.clone();
            plain.ep = 1;
            r.breakdown(&batch).tensor_parallel.as_secs_f64()
                - Roofline::new(&plain).unwrap().breakdown(&decodes(256 / c.dp, 1000)).tensor_parallel.as_secs_f64()
        };
        assert!(a2a(&w, &wide) > a2a(&r, &dp), "{} against {}", a2a(&w, &wide), a2a(&r, &dp));
        assert!(a2a(&r, &dp) >= floor);
    }

    #[test]
    fn a_lone_sequence_runs_on_one_rank_of_the_group() {
        // One 8,192-token prompt on an EP-8 group of one-GPU ranks: its
        // attention and shared weights' work is all on one rank; only the
        // experts' share spreads. Eight prompts spread over the eight ranks.
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        c.dp = 8;
        let one_gpu = Roofline::new(&c).unwrap();
        c.ep = 8;
        let ep = Roofline::new(&c).unwrap();
        let prompts = |k: u32| {
            let mut b = BatchShape::default();
            for _ in 0..k {
                b.add_prefill(0, 8192);
            }
            b
        };
        let attention = |r: &Roofline, k| r.breakdown(&prompts(k)).attention.as_secs_f64();
        assert!((attention(&ep, 1) / attention(&one_gpu, 1) - 1.0).abs() < 1e-9);
        assert!((attention(&ep, 8) / attention(&one_gpu, 1) - 1.0).abs() < 1e-9);
        let t = |r: &Roofline, k| r.step_time(&prompts(k)).as_secs_f64();
        assert!(t(&ep, 1) > 0.3 * t(&one_gpu, 1), "{} vs {}", t(&ep, 1), t(&one_gpu, 1));
        assert!(t(&ep, 8) < 0.5 * 8.0 * t(&one_gpu, 1), "eight ranks work at once");
    }

    /// With attention data-parallel ranks a prompt's chunk runs whole on
    /// its request's rank: one 4,096-token chunk among 63 decodes holds the
    /// group's step for its rank's prefill (it had been spread over the
    /// eight ranks as if each took 512 of its tokens), while eight chunks of
    /// 512 spread as before.
    #[test]
    fn a_lone_prompt_holds_an_attention_data_parallel_step() {
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        (c.dp, c.ep) = (8, 8);
        let r = Roofline::new(&c).unwrap();
        let batch = |chunks: u32, size: u32, n: u32| {
            let mut b = decodes(n, 1000);
            for _ in 0..chunks {
                b.add_prefill(0, size);
            }
            b
        };
        let (lone, spread) = (batch(1, 4096, 63), batch(8, 512, 56));
        let att = |b: &BatchShape| r.breakdown(b).attention.as_secs_f64();
        let gemm = |b: &BatchShape| r.breakdown(b).gemm.as_secs_f64();
        // The busiest rank's prefill: 4,096 tokens against 512.
        assert!(att(&lone) > 4.0 * att(&spread), "{} vs {}", att(&lone), att(&spread));
        assert!(gemm(&lone) > 2.0 * gemm(&spread), "{} vs {}", gemm(&lone), gemm(&spread));
        // Spread evenly, a rank holds an eighth: the same as one rank's
        // share of a group step timed on one GPU group alone.
        let mut one = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        one.dp = 8;
        let alone = Roofline::new(&one).unwrap().breakdown(&batch(1, 512, 7)).attention.as_secs_f64();
        assert!((att(&spread) / alone - 1.0).abs() < 1e-9, "{} vs {alone}", att(&spread));
    }

    #[test]
    fn the_rank_that_holds_the_most_work_sets_the_group_s_step() {
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        (c.dp, c.ep) = (2, 2);
        c.calibration.moe_activation_traffic = 0.0;
        let r = Roofline::new(&c).unwrap();
        // Two 2,000-token prompts and two decodes of 1,000-token contexts.
        let rank = |prompts: u32, ctx: &[u32]| {
            let mut b = BatchShape::default();
            (0..prompts).for_each(|_| b.add_prefill(0, 2000));
            ctx.iter().for_each(|&s| b.add_decode(s));
            b
        };
        let whole = rank(2, &[1000, 1000]);
        let step = |ranks: Option<&[BatchShape]>| r.step_time_and_power_ranked(&whole, ranks).0.as_secs_f64();
        let (even, apart, together) = (
            step(None),
            step(Some(&[rank(1, &[1000]), rank(1, &[1000])])),
            step(Some(&[rank(2, &[]), rank(0, &[1000, 1000])])),
        );
        // One prompt a rank is the even share the batch alone gives.
        assert!((apart / even - 1.0).abs() < 1e-9, "{apart} vs {even}");
        // Both prompts on one rank: the other waits for its 4,000 tokens.
        assert!(together > 1.5 * apart, "{together} vs {apart}");
        // Decodes of longer contexts on one rank: its attention is the longer.
        let (short, long) = (rank(0, &[100, 100]), rank(0, &[8000, 8000]));
        let decodes = rank(0, &[100, 100, 8000, 8000]);
        let skewed = r.step_time_and_power_ranked(&decodes, Some(&[short, long])).0;
        let mixed = r.step_time_and_power_ranked(&decodes, Some(&[rank(0, &[100, 8000]), rank(0, &[100, 8000])])).0;
        assert!(skewed > mixed, "{skewed:?} vs {mixed:?}");

        // The engine counts each rank's own: under vLLM's balancer four
        // requests alternate over the two ranks, so prompts of 4,000, 100,
        // 4,000 and 100 tokens put 8,000 on the first rank, which the even
        // share (the largest prompt, or half of the 8,200) would have put
        // at 4,100.
        c.max_num_batched_tokens = 8192;
        let mut e = crate::engine::Engine::new(c.clone()).unwrap();
        for (id, len) in [(1, 4000), (2, 100), (3, 4000), (4, 100)] {
            e.add_request(id, crate::engine::kv::Prompt::synthetic(len, &[], id, c.block_size), 4).unwrap();
        }
        let first = e.step().unwrap();
        assert_eq!(first.batch.prefill_tokens, 8200);
        let mut lopsided = [BatchShape::default(); 2];
        (0..2).for_each(|_| lopsided[0].add_prefill(0, 4000));
        (0..2).for_each(|_| lopsided[1].add_prefill(0, 100));
        let mut all = BatchShape::default();
        [4000, 100, 4000, 100].into_iter().for_each(|n| all.add_prefill(0, n));
        assert_eq!(first.duration, r.step_time_and_power_ranked(&all, Some(&lopsided)).0);
        assert!(first.duration.as_secs_f64() > 1.5 * r.step_time(&all).as_secs_f64());
    }

    #[test]
    fn imbalance_makes_the_step_wait_for_the_busiest_gpu() {
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        c.dp = 8;
        c.ep = 8;
        let real = Roofline::new(&c).unwrap();
        let mut even = real.clone();
        even.parallel.as_mut().unwrap().balanced();
        // A prefill of 8 × 2,048 tokens is compute-bound: the busiest GPU's
        // share of the routed tokens sets the experts' time.
        let mut prefill = BatchShape::default();
        for _ in 0..8 {
            prefill.add_prefill(0, 2048);
        }
        let (r, e) = (real.step_time(&prefill).as_secs_f64(), even.step_time(&prefill).as_secs_f64());
        assert!(r > e, "{r} vs {e}");
        // 131k assignments over 8 GPUs: σ/μ ≈ 0.7 %, the busiest ≈ 1 % over.
        let gemm = |rl: &Roofline| rl.breakdown(&prefill).gemm.as_secs_f64();
        assert!(gemm(&real) / gemm(&even) < 1.05, "{}", gemm(&real) / gemm(&even));
        // Few tokens spread unevenly: relatively more imbalance.
        let p = real.parallel.as_ref().unwrap();
        let ep = p.ep.as_ref().unwrap();
        let (few, many) = (super::Parallel::imbalance(ep, 64.0), super::Parallel::imbalance(ep, 131_072.0));
        assert!(few > 1.3 && many < 1.02 && many > 1.0, "{few} {many}");
        // Blom's value for the largest of 8 normals (exact: 1.424).
        assert!((ep.z_max - 1.424).abs() < 0.03, "{}", ep.z_max);
    }

    /// The busiest GPU's distinct experts against a Monte Carlo of the
    /// same routing (tokens choosing k of E at random, E / EP a GPU), and
    /// what that makes of one decode: top-8 of 256 over 8 GPUs puts 2.56
    /// experts on the busiest GPU for one token, against a mean of 1.
    #[test]
    fn the_busiest_gpu_reads_more_experts_than_the_mean() {
        use rand::{rngs::StdRng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(7);
        for (e, k, g) in [(256u32, 8u32, 8u32), (128, 8, 8), (8, 2, 2), (256, 8, 16), (128, 8, 2)] {
            let table = super::busiest_gpu_experts(e, k, g).unwrap();
            let m = (e / g) as f64;
            assert!(table.windows(2).all(|w| w[1] >= w[0] - 1e-12), "{e}/{k}/{g}: not monotone");
            assert!(m - table.last().unwrap() < 1e-6 && table.len() < 1000, "{e}/{k}/{g}: {}", table.len());
            for b in [1usize, 2, 4, 16, 64] {
                let Some(&exact) = table.get(b) else { continue };
                let mean = m * (1.0 - (1.0 - k as f64 / e as f64).powi(b as i32));
                assert!(exact >= mean, "{e}/{k}/{g}, {b} tokens: {exact} under the mean {mean}");
                let trials = 4000;
                let mut sum = 0usize;
                for _ in 0..trials {
                    let mut touched = vec![false; e as usize];
                    for _ in 0..b {
                        for x in rand::seq::index::sample(&mut rng, e as usize, k as usize) {
                            touched[x] = true;
                        }
                    }
                    sum += touched.chunks(m as usize).map(|c| c.iter().filter(|&&t| t).count()).max().unwrap();
                }
                let mc = sum as f64 / trials as f64;
                assert!((exact / mc - 1.0).abs() < 0.02, "{e}/{k}/{g}, {b} tokens: {exact:.3} against {mc:.3}");
            }
        }
        let deepseek = super::busiest_gpu_experts(256, 8, 8).unwrap();
        assert!((deepseek[1] - 2.564).abs() < 0.002, "{}", deepseek[1]);
        assert!(super::busiest_gpu_experts(2048, 8, 8).is_none());
        // One decode of Qwen3-30B-A3B on EP 8 (eight one-GPU ranks): the
        // busiest GPU reads its 2.53 experts, not the mean's 1.
        let mut c = cfg("qwen3-30b-a3b", "h100", Precision::Bf16);
        (c.dp, c.ep) = (8, 8);
        c.calibration.moe_activation_traffic = 0.0;
        let real = Roofline::new(&c).unwrap();
        let mut even = real.clone();
        even.parallel.as_mut().unwrap().balanced();
        let one = decodes(1, 1000);
        let ep = real.parallel.as_ref().unwrap().ep.as_ref().unwrap();
        let read = |r: &Roofline| r.breakdown(&one).gemm.as_secs_f64();
        let extra = (super::Parallel::experts_read(ep, 1.0) - 1.0) * real.expert_bytes / ep.gpu_weight_rate;
        assert!(((read(&real) - read(&even)) / extra - 1.0).abs() < 1e-4, "{} {} {extra}", read(&real), read(&even));
        assert!((super::Parallel::experts_read(ep, 1.0) - 2.53).abs() < 0.01);
        // A prefill's tokens touch every expert of every GPU: no more.
        assert!((super::Parallel::experts_read(ep, 4096.0) - 16.0).abs() < 1e-6);
    }

    #[test]
    fn a_pipeline_is_sized_by_its_heaviest_stage() {
        // DeepSeek-V3 with its first 30 layers dense: two stages of 31 and
        // 30 layers, the second all experts and the LM head. It had been
        // sized as half the model a stage, and "fit" on two H200s a stage.
        let mut m = ModelSpec::lookup("deepseek-v3").unwrap();
        m.dense_mlp_layers = 30;
        let mut c = EngineConfig::new(m.clone(), GpuSpec::lookup("h200").unwrap(), Precision::Fp8);
        c.tp = 2;
        c.pp = 2;
        let b = 1.0;
        let attention = m.attention_params_per_layer() as f64 * b / 2.0;
        let routed = 256.0 * m.mlp_params_per_expert() as f64 * b / 2.0;
        let always = (7168.0 * 256.0 + m.shared_expert_params_per_layer() as f64) * b / 2.0;
        let head = 129_280.0 * 7168.0 * 2.0 / 2.0;
        let second = 30.0 * (attention + routed + always) + head;
        let (weights, _) = per_gpu(&c, m.weight_bytes(c.precision), 1.0);
        assert!((weights / second - 1.0).abs() < 1e-9, "{weights} against {second}");
        assert!(weights > 0.6 * m.weight_bytes(c.precision) / 2.0, "{weights}");
        assert!(kv_capacity(&c).is_err(), "the second stage does not fit two H200s");
        // Layers dealt as vLLM deals them: 61 over 4 stages is 15, 15, 16, 15.
        c.pp = 4;
        c.tp = 8;
        let (weights, _) = per_gpu(&c, m.weight_bytes(c.precision), 1.0);
        let (attention, routed, always) = (attention / 4.0, routed / 4.0, always / 4.0);
        let third = 16.0 * (attention + routed + always);
        let last = 15.0 * (attention + routed + always) + head / 4.0;
        assert!((weights / third.max(last) - 1.0).abs() < 1e-9, "{weights} against {third} / {last}");
    }

    #[test]
    fn a_pipeline_s_stages_hold_the_dense_layers_where_the_model_places_them() {
        // Llama-4-Maverick's experts are in every other layer: two stages of
        // 24 layers hold 12 dense and 12 of experts each, and the heavier is
        // the one with the input table (its LM head's, on the last, is the
        // same size). It had been sized as 24 layers of experts, the dense
        // layers taken to be the first.
        let m = ModelSpec::lookup("llama-4-maverick").unwrap();
        let mut c = EngineConfig::new(m.clone(), GpuSpec::lookup("h200").unwrap(), Precision::Fp8);
        c.tp = 4;
        c.pp = 2;
        let b = 1.0;
        let attention = m.attention_params_per_layer() as f64 * b / 4.0;
        let dense = m.dense_mlp_params_per_layer() as f64 * b / 4.0;
        let experts = (128.0 * m.mlp_params_per_expert() as f64 * b
            + (5120.0 * 128.0 + m.shared_expert_params_per_layer() as f64) * b)
            / 4.0;
        let table = 202_048.0 * 5120.0 * 2.0 / 4.0;
        let stage = 24.0 * attention + 12.0 * (dense + experts) + table;
        let (weights, _) = per_gpu(&c, m.weight_bytes(c.precision), 1.0);
        assert!((weights / stage - 1.0).abs() < 1e-9, "{weights} against {stage}");
        // Half the model's weights a stage, give or take the tables.
        let half = m.weight_bytes(c.precision) / 2.0 / 4.0;
        assert!((weights / half - 1.0).abs() < 0.02, "{weights} against {half}");
        // The first-k reading, for comparison: 24 layers of experts.
        let mut first = c.clone();
        first.model.dense_mlp_at.clear();
        let (prefix, _) = per_gpu(&first, m.weight_bytes(c.precision), 1.0);
        assert!(prefix > 1.8 * weights, "{prefix} against {weights}");
        // Four H200s a stage hold it in FP8, and the cache has room.
        assert!(kv_capacity(&c).is_ok());
    }

    #[test]
    fn a_pipeline_s_last_stage_reads_the_lm_head_and_sets_a_saturated_step() {
        // 70B in FP8 on TP2 × PP4: 80 layers, 20 a stage, the LM head's
        // 16-bit table on the last. A memory-bound step of 256 decodes runs
        // four micro-batches, and the last stage reads the table for each:
        // the table costs the step four reads, where the other stages idle
        // for them. One sequence's step is one trip: one read.
        let mut c = cfg("llama-3.1-70b", "h200", Precision::Fp8);
        c.tp = 2;
        c.pp = 4;
        let mut small = c.clone();
        small.model.vocab_size = 1;
        let read = c.model.vocab_size as f64 * c.model.hidden_size as f64 * 2.0
            / (2.0 * c.gpu.bandwidth_bytes_per_s() * c.calibration.eta_weights);
        let head_cost = |b: &BatchShape| {
            let step = |c: &EngineConfig| Roofline::new(c).unwrap().step_time(b).as_secs_f64();
            (step(&c) - step(&small)) / read
        };
        let (one, full) = (head_cost(&decodes(1, 1024)), head_cost(&decodes(256, 1024)));
        assert!((one - 1.0).abs() < 0.01, "one sequence: {one} reads");
        assert!((full - 4.0).abs() < 0.05, "256 sequences: {full} reads");
        // Two micro-batches: the trip (one read) is still the longer.
        let two = head_cost(&decodes(2, 1024));
        assert!((two - 1.0).abs() < 0.01, "two sequences: {two} reads");
    }

    #[test]
    fn pipeline_splits_memory_and_costs_a_little_latency_at_one_user() {
        // Llama-3.1-70B in BF16 does not fit one H100; two stages do.
        let one = cfg("llama-3.1-70b", "h100", Precision::Bf16);
        let err = kv_capacity(&one).unwrap_err().to_string();
        assert!(err.contains("--pp 2"), "{err}");
        let mut pp4 = one.clone();
        pp4.pp = 4;
        let cap = kv_capacity(&pp4).unwrap();
        // Each stage holds 20 of the 80 layers; the first the embedding, the
        // last the LM head: a quarter of the layers and one table each.
        let table = 128_256.0 * 8192.0 * 2.0;
        let layers = one.model.weight_bytes(one.precision) - 2.0 * table;
        assert!((cap.weight_bytes_per_gpu / (layers / 4.0 + table) - 1.0).abs() < 1e-9, "{cap:?}");
        assert_eq!(pp4.gpus(), 4);
        // The KV cache's layers split too: a quarter of the bytes per token.
        let mut tp_only = one.clone();
        tp_only.tp = 4;
        let tp_cap = kv_capacity(&tp_only).unwrap();
        assert_eq!(cap.kv_bytes_per_token_per_gpu, one.model.kv_bytes_per_token_per_gpu(one.kv_cache_dtype, 1) / 4.0);
        // PP 4 holds a little less than TP 4: its end stages hold a whole
        // table each, where TP splits both tables four ways.
        let ratio = cap.tokens() as f64 / tp_cap.tokens() as f64;
        assert!(ratio < 1.0 && ratio > 0.95, "PP 4 against TP 4: {ratio}");
        // Step time against TP alone on the same GPUs per stage: one sequence
        // passes every stage in turn (the bubble), plus the hand-offs.
        let mut base = cfg("llama-3.1-70b", "h200", Precision::Fp8);
        let flat = Roofline::new(&base).unwrap();
        base.pp = 2;
        let piped = Roofline::new(&base).unwrap();
        let t = |r: &Roofline, b: &BatchShape| r.step_time(b).as_secs_f64();
        let single = decodes(1, 1000);
        let ratio = t(&piped, &single) / t(&flat, &single);
        assert!(ratio > 1.0 && ratio < 1.05, "one sequence: {ratio}");
        // Two micro-batches in flight: a batch of 256 decodes steps faster
        // than on one stage group (each micro-batch reads the weights once
        // per stage, the stages work at once).
        let full = decodes(256, 1000);
        assert!(t(&piped, &full) < t(&flat, &full) * 0.8, "{} vs {}", t(&piped, &full), t(&flat, &full));
        // Power and provisioning count both stages' GPUs.
        assert_eq!(piped.provisioned_watts(), 2.0 * base.gpu.tdp_w);
    }

    #[test]
    fn pipeline_in_virtual_time_gains_nothing_at_one_user_and_throughput_at_saturation() {
        let base = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let mut pp2 = base.clone();
        pp2.pp = 2;
        let one_user = VirtualLoad::closed_loop(vec![VirtualRequest::new(256, 128); 4], 1);
        let (a, b) = (simulate(&base, &one_user).unwrap(), simulate(&pp2, &one_user).unwrap());
        let (ta, tb) = (mean_tpot_ms(&a), mean_tpot_ms(&b));
        assert!(tb >= ta && tb < ta * 1.05, "TPOT {ta:.3} → {tb:.3} ms");
        assert!(output_throughput(&b) <= output_throughput(&a), "no gain at one user");
        // Saturated: 256 users, at most 128 sequences a replica on one stage
        // group; two stages double the KV room and keep two micro-batches
        // in flight.
        let mut capped = base.clone();
        capped.max_num_seqs = Some(128);
        let mut capped2 = capped.clone();
        capped2.pp = 2;
        let many = VirtualLoad::closed_loop(vec![VirtualRequest::new(1024, 256); 1024], 256);
        let (a, b) = (simulate(&capped, &many).unwrap(), simulate(&capped2, &many).unwrap());
        let gain = output_throughput(&b) / output_throughput(&a);
        assert!(gain > 1.2 && gain < 2.2, "saturated throughput ×{gain:.2}");
    }

    /// A prompt's chunk passes the stages whole, in one micro-batch: its
    /// output comes no sooner than the chunk's trip through the whole
    /// model, however many micro-batches the decodes beside it fill (its
    /// tokens had been cut over eight micro-batches, and eight users of
    /// 4,096-token prompts on eight stages got their first tokens in 35 ms
    /// where the prompt alone takes 131). The step itself, and the decodes'
    /// tokens, end sooner: each stage passes the chunk once (session 46;
    /// until then the step lasted the chunk's whole trip).
    #[test]
    fn a_prompt_chunk_is_not_cut_over_micro_batches() {
        let mut c = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        c.pp = 8;
        let r = Roofline::new(&c).unwrap();
        let t = |b: &BatchShape| r.step_time(b).as_secs_f64();
        let chunk_out = |b: &BatchShape| {
            let step = r.step_time(b);
            (step + r.chunk_late(b, None, 4096, step)).as_secs_f64()
        };
        let mut alone = BatchShape::default();
        alone.add_prefill(0, 4096);
        let mut among = decodes(7, 4096);
        among.add_prefill(0, 4096);
        assert!(chunk_out(&among) >= t(&alone), "{} against {} alone", chunk_out(&among), t(&alone));
        // The step lasts one stage time of the chunk and seven of the
        // decodes' micro-batches: well under the chunk's trip.
        assert!(t(&among) < 0.5 * t(&alone), "the step {} against the chunk's trip {}", t(&among), t(&alone));
        assert!(t(&among) > t(&alone) / 8.0, "the step {} holds the chunk's stage time", t(&among));
        // Decodes alone still fill the pipeline: eight sequences step in
        // about one sequence's time, not eight.
        assert!(t(&decodes(8, 4096)) < 2.0 * t(&decodes(1, 4096)));
        // In virtual time: no user gets a first token sooner than a lone
        // prompt's trip through every stage.
        let ttft = |users: u32| {
            let load = VirtualLoad::closed_loop(vec![VirtualRequest::new(4096, 64); 4 * users as usize], users);
            let run = simulate(&c, &load).unwrap();
            let v: Vec<f64> = run.records.iter().filter_map(|r| r.ttft()).map(|d| d.as_secs_f64()).collect();
            v.iter().sum::<f64>() / v.len() as f64
        };
        let (one, eight) = (ttft(1), ttft(8));
        assert!(eight >= one * (1.0 - 1e-6), "mean TTFT {one:.4} s at one user, {eight:.4} s at eight");
    }

    /// Users started apart put a prompt chunk in nearly every step, users
    /// started together leave pure decode steps between their waves. With
    /// a chunk's step lasting the chunk's whole trip for every micro-batch
    /// (until session 46), the 70B on TP 2 × PP 4 gave 6,628 output
    /// tokens/s started together and 3,709 started apart, where TP 8 gives
    /// the two within 1 %. Each stage passes the chunk once, and its
    /// request alone waits for its trip: the two starts now agree as
    /// TP 8's do, and the pipeline's TPOT is not dearer than TP 8's.
    #[test]
    fn a_pipeline_s_throughput_does_not_depend_on_how_users_start() {
        let mut pp = cfg("llama-3.1-70b", "h200", Precision::Fp8);
        pp.tp = 2;
        pp.pp = 4;
        let mut tp8 = pp.clone();
        tp8.tp = 8;
        tp8.pp = 1;
        let run = |c: &EngineConfig, apart: bool| {
            let mut load = VirtualLoad::closed_loop(vec![VirtualRequest::new(1024, 256); 768], 256);
            if apart {
                load.plan.ramp_up = Duration::from_secs(15);
            }
            let run = simulate(c, &load).unwrap();
            (output_throughput(&run), mean_tpot_ms(&run))
        };
        let ((pt, pt_tpot), (pa, pa_tpot)) = (run(&pp, false), run(&pp, true));
        let ((tt, _), (ta, ta_tpot)) = (run(&tp8, false), run(&tp8, true));
        let ratio = pa / pt;
        assert!(ratio > 0.85 && ratio < 1.15, "PP: {pt:.0} tok/s together, {pa:.0} apart ({ratio:.2})");
        assert!((ta / tt - 1.0).abs() < 0.1, "TP 8: {tt:.0} together, {ta:.0} apart");
        assert!(
            pa_tpot < 1.2 * ta_tpot,
            "apart: TPOT {pa_tpot:.1} ms on PP, {ta_tpot:.1} on TP 8 (PP together {pt_tpot:.1})"
        );
    }

    /// Saturated with long prompts, a pipeline of four stages prefills
    /// about as fast as four replicas: each micro-batch in flight has its
    /// own token budget, as each of vLLM's scheduled batches has (with the
    /// budget taken for the whole step, a chunk kept whole left four
    /// stages prefilling at 1.3 GPUs' rate).
    #[test]
    fn a_saturated_pipeline_prefills_with_a_budget_a_micro_batch() {
        let prompts = |c: &EngineConfig| {
            let load = VirtualLoad::closed_loop(vec![VirtualRequest::new(8192, 16); 256], 64);
            let run = simulate(c, &load).unwrap();
            (8192 * run.records.len()) as f64 / run.engine.makespan.as_secs_f64()
        };
        let one = cfg("llama-3.1-8b", "h100", Precision::Bf16);
        let (mut pp4, mut dp4) = (one.clone(), one.clone());
        pp4.pp = 4;
        dp4.dp = 4;
        let (a, b, d) = (prompts(&one), prompts(&pp4), prompts(&dp4));
        assert!(
            b > 3.0 * a && b > 0.8 * d,
            "prompt tokens/s: {a:.0} on one GPU, {b:.0} on 4 stages, {d:.0} on 4 replicas"
        );
    }

    /// Expert parallelism spreads the routed experts only: the shared
    /// experts and DeepSeek's dense layers stay on every rank (split by its
    /// TP), their flops on the rank's own GPUs, and the all-to-alls run in
    /// the MoE layers alone.
    #[test]
    fn expert_parallelism_spreads_routed_experts_and_keeps_shared_ones_on_every_rank() {
        let mut c = cfg("deepseek-v3", "h200", Precision::Fp8);
        c.tp = 8;
        c.dp = 2;
        c.ep = 16;
        let m = c.model.clone();
        let routed = m.expert_params_all_layers() as f64 * 256.0;
        let cap = kv_capacity(&c).unwrap();
        let want = (m.weight_bytes(Precision::Fp8) - routed) / 8.0 + routed / 16.0;
        assert!((cap.weight_bytes_per_gpu - want).abs() < 1.0, "{} vs {want}", cap.weight_bytes_per_gpu);
        // Without the shared experts each GPU would hold 58 × 7,168 × 2,048 × 3
        // bytes less, divided by TP only.
        let mut unshared = c.clone();
        unshared.model.shared_expert_intermediate_size = 0;
        let less = kv_capacity(&unshared).unwrap().weight_bytes_per_gpu;
        assert!((cap.weight_bytes_per_gpu - less - 58.0 * 44_040_192.0 / 8.0).abs() < 1.0);
        let r = Roofline::new(&c).unwrap();
        let ep = r.parallel.as_ref().unwrap().ep.as_ref().unwrap();
        assert_eq!(ep.a2a_calls, 2.0 * 58.0);
        assert_eq!(ep.expert_flops_per_token, 2.0 * 8.0 * 58.0 * 44_040_192.0);
        assert_eq!(ep.experts_per_gpu, 16.0);
        // The rest of a token's flops (attention, dense layers, shared
        // experts, router) run on the rank's GPUs.
        let rest = r.flops_per_token - ep.expert_flops_per_token;
        let dense = 2.0 * (61.0 * 187_105_280.0 + 3.0 * 396_361_728.0 + 58.0 * (44_040_192.0 + 7168.0 * 256.0));
        assert_eq!(rest, dense);
    }
}
