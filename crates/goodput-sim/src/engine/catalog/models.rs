//! Model architectures, shipped or read from a Hugging Face `config.json`,
//! and the parameter and byte counts the roofline model is built from.

use super::names::normalise;
use super::precision::{KvCacheDtype, Precision};
use crate::engine::error::Error;
use crate::template::ChatTemplate;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A mixture-of-experts MLP: `num_experts` per layer, `experts_per_token`
/// of them active for each token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Moe {
    pub num_experts: u32,
    pub experts_per_token: u32,
}

/// Multi-head latent attention (DeepSeek-V2 and V3): keys and values are
/// cached as one compressed latent of `kv_lora_rank` elements plus a shared
/// rotary key of `qk_rope_head_dim` per token and layer, and up-projected to
/// the heads' `qk_nope_head_dim` keys and `v_head_dim` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mla {
    pub kv_lora_rank: u32,
    /// The queries' compression rank; `None`: the queries are projected at
    /// full rank (DeepSeek-V2-Lite).
    #[serde(default)]
    pub q_lora_rank: Option<u32>,
    pub qk_nope_head_dim: u32,
    pub qk_rope_head_dim: u32,
    pub v_head_dim: u32,
}

/// Sliding-window attention: `layers` of the model's layers attend to the
/// last `window` tokens only, the others to the whole context (GPT-OSS: 18
/// of its 36 layers, every other one, at 128 tokens; Mistral-7B-v0.1: all 32
/// at 4,096). `chunked`: chunked local attention instead (Llama 4: 36 of
/// its 48 layers in chunks of 8,192): a token attends to the tokens of its
/// own chunk of `window`, from the chunk's start, not to the last `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlidingWindow {
    pub window: u32,
    pub layers: u32,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chunked: bool,
}

impl SlidingWindow {
    /// Of `context` tokens before a token, those a sliding layer attends
    /// to (and holds): the last `window`, or (chunked) those of the
    /// token's own chunk.
    pub fn within(self, context: u32) -> u32 {
        if self.chunked {
            context % self.window
        } else {
            context.min(self.window)
        }
    }

    /// The (query, key) pairs a sliding layer computes for a prefill chunk
    /// of `new` tokens after `cached` ones, in the continuous form the full
    /// count `new · (cached + new / 2)` takes: ∫ min(x, W) dx from `cached`
    /// to `cached + new`; chunked, ∫ (x mod C) dx, by G(x) = ⌊x / C⌋ · C² / 2
    /// + (x mod C)² / 2.
    pub fn pairs(self, cached: u32, new: u32) -> f64 {
        if self.chunked {
            let c = u64::from(self.window);
            let g = |x: u64| ((x / c) as f64) * (c as f64) * (c as f64) / 2.0 + ((x % c) as f64).powi(2) / 2.0;
            return g(u64::from(cached) + u64::from(new)) - g(u64::from(cached));
        }
        let (p, c, w) = (f64::from(cached), f64::from(new), f64::from(self.window));
        if p + c <= w {
            c * (p + c / 2.0)
        } else if p >= w {
            c * w
        } else {
            (w - p) * (p + (w - p) / 2.0) + (p + c - w) * w
        }
    }
}

/// How many KV-cache blocks a sequence takes ([`ModelSpec::kv_blocks`]): a
/// block per `block_size` tokens, and with a sliding window only the
/// window's blocks for its layers.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KvBlocks {
    sliding: Option<SlidingWindow>,
    /// The sliding layers' blocks a block of the pool's stands for; `None`
    /// where every layer slides (the pool's blocks are theirs).
    per_block: Option<f64>,
}

impl KvBlocks {
    /// Blocks of `block_size` tokens that a sequence of `tokens` takes: its
    /// full-attention layers' blocks for every token, and its sliding
    /// layers' for the window alone, which spans ⌈W / B⌉ + 1 blocks at most
    /// once it has slid (a block it has partly left stays), in the pool's
    /// units.
    pub fn blocks_for(self, tokens: u32, block_size: u32) -> u32 {
        let block_size = block_size.max(1);
        let all = tokens.div_ceil(block_size);
        let Some(s) = self.sliding else { return all };
        let window = all.min(s.window.div_ceil(block_size) + 1);
        match self.per_block {
            None => window,
            Some(per_block) => all.saturating_add((f64::from(window) * per_block).ceil() as u32),
        }
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A decoder-only transformer, as much of it as the step-time model needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub name: String,
    pub num_layers: u32,
    pub hidden_size: u32,
    pub num_heads: u32,
    /// The KV heads of grouped-query attention (unused with `mla`).
    pub num_kv_heads: u32,
    /// The attention heads' width; with `mla`, the query and key heads'
    /// (`qk_nope_head_dim + qk_rope_head_dim`).
    pub head_dim: u32,
    /// The gated MLP's inner size (per routed expert for MoE).
    pub intermediate_size: u32,
    pub vocab_size: u32,
    pub tie_word_embeddings: bool,
    pub moe: Option<Moe>,
    /// The longest prompt plus output the model accepts.
    pub max_context: u32,
    /// The always-active shared experts of every MoE layer, their gated
    /// MLPs' inner sizes added (DeepSeek: `n_shared_experts` ×
    /// `moe_intermediate_size`; Qwen-MoE: `shared_expert_intermediate_size`).
    /// 0: none (Mixtral, Qwen3).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_expert_intermediate_size: u32,
    /// Layers of a mixture of experts whose MLP is dense, of
    /// `dense_intermediate_size` (DeepSeek's `first_k_dense_replace`, or
    /// the layers `moe_layer_freq`, `decoder_sparse_step` and
    /// `mlp_only_layers` leave dense). 0 for a dense model, every layer of
    /// which is dense of `intermediate_size`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dense_mlp_layers: u32,
    /// Where those dense layers stand, where they are not the first
    /// `dense_mlp_layers`: their indices, ascending (Llama 4 Maverick's
    /// every other layer; `moe_layer_freq`, `decoder_sparse_step` and
    /// `mlp_only_layers` may place them so). Empty: the first ones, as
    /// DeepSeek's `first_k_dense_replace` places them. A pipeline's
    /// stages hold the layers in order, so which stage holds the experts
    /// depends on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dense_mlp_at: Vec<u32>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dense_intermediate_size: u32,
    /// Multi-head latent attention in place of grouped-query attention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mla: Option<Mla>,
    /// The weights' width the checkpoint is published in, where it is not
    /// 16-bit: a config.json's `quantization_config` (FP8, AWQ, GPTQ,
    /// NVFP4), DeepSeek-V3's FP8. What `--precision auto` runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_precision: Option<Precision>,
    /// A `quantization_config` whose scheme is not modelled (bitsandbytes,
    /// mixed schemes), named: the weights run at
    /// `--precision`'s width (16-bit under `auto`), and the commands say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmodelled_quantization: Option<String>,
    /// Sliding-window attention in some or all of the layers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sliding_window: Option<SlidingWindow>,
}

struct ModelEntry {
    aliases: &'static [&'static str],
    name: &'static str,
    /// Releases of the same architecture under an alias of their own: the
    /// alias, the name the release is shown by, and its context where it
    /// differs (0: the entry's). Llama 3 had 8,192 tokens; Llama 3.3 and
    /// DeepSeek-R1 are Llama 3.1's and DeepSeek-V3's shapes.
    releases: &'static [(&'static str, &'static str, u32)],
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    intermediate: u32,
    vocab: u32,
    moe: Option<Moe>,
    max_context: u32,
    head_dim: u32,
    shared_intermediate: u32,
    dense_layers: u32,
    /// Llama 4's `interleave_moe_layer_step`: layer i has experts when
    /// (i + 1) is a multiple of it, the others are the dense ones. 1: the
    /// dense layers are the first `dense_layers`.
    moe_step: u32,
    dense_intermediate: u32,
    mla: Option<Mla>,
    checkpoint: Option<Precision>,
    sliding: Option<SlidingWindow>,
}

/// What an entry leaves as it was before DeepSeek: heads of 128, no shared
/// experts, every layer's MLP of one kind, grouped-query attention.
const PLAIN: ModelEntry = ModelEntry {
    aliases: &[],
    name: "",
    releases: &[],
    layers: 0,
    hidden: 0,
    heads: 0,
    kv_heads: 0,
    intermediate: 0,
    vocab: 0,
    moe: None,
    max_context: 0,
    head_dim: 128,
    shared_intermediate: 0,
    dense_layers: 0,
    moe_step: 1,
    dense_intermediate: 0,
    mla: None,
    checkpoint: None,
    sliding: None,
};

/// What GPT-OSS's two sizes share (below).
const GPT_OSS: ModelEntry = ModelEntry {
    hidden: 2880,
    heads: 64,
    kv_heads: 8,
    intermediate: 2880,
    vocab: 201088,
    max_context: 131072,
    head_dim: 64,
    checkpoint: Some(Precision::Mxfp4),
    ..PLAIN
};

/// What Llama 4's two share (below).
const LLAMA_4: ModelEntry = ModelEntry {
    layers: 48,
    hidden: 5120,
    heads: 40,
    kv_heads: 8,
    intermediate: 8192,
    vocab: 202048,
    shared_intermediate: 8192,
    sliding: Some(SlidingWindow { window: 8192, layers: 36, chunked: true }),
    ..PLAIN
};

const MODELS: [ModelEntry; 16] = [
    ModelEntry {
        aliases: &["llama-3.1-8b", "llama-3-8b", "llama3.1-8b", "llama3-8b"],
        name: "Llama-3.1-8B",
        releases: &[("llama-3-8b", "Llama-3-8B", 8192), ("llama3-8b", "Llama-3-8B", 8192)],
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        intermediate: 14336,
        vocab: 128256,
        moe: None,
        max_context: 131072,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["llama-3.1-70b", "llama-3.3-70b", "llama-3-70b", "llama3.1-70b", "llama3.3-70b", "llama3-70b"],
        name: "Llama-3.1-70B",
        releases: &[
            ("llama-3.3-70b", "Llama-3.3-70B", 0),
            ("llama3.3-70b", "Llama-3.3-70B", 0),
            ("llama-3-70b", "Llama-3-70B", 8192),
            ("llama3-70b", "Llama-3-70B", 8192),
        ],
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        intermediate: 28672,
        vocab: 128256,
        moe: None,
        max_context: 131072,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["llama-3.1-405b", "llama3.1-405b"],
        name: "Llama-3.1-405B",
        layers: 126,
        hidden: 16384,
        heads: 128,
        kv_heads: 8,
        intermediate: 53248,
        vocab: 128256,
        moe: None,
        max_context: 131072,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["qwen2.5-7b", "qwen-2.5-7b"],
        name: "Qwen2.5-7B",
        layers: 28,
        hidden: 3584,
        heads: 28,
        kv_heads: 4,
        intermediate: 18944,
        vocab: 152064,
        moe: None,
        max_context: 32768,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["qwen2.5-72b", "qwen-2.5-72b"],
        name: "Qwen2.5-72B",
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        intermediate: 29568,
        vocab: 152064,
        moe: None,
        max_context: 32768,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["mixtral-8x7b"],
        name: "Mixtral-8x7B",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        intermediate: 14336,
        vocab: 32000,
        moe: Some(Moe { num_experts: 8, experts_per_token: 2 }),
        max_context: 32768,
        ..PLAIN
    },
    // Qwen3's dense models, from their config.json on the Hugging Face hub
    // (Qwen/Qwen3-8B, Qwen/Qwen3-14B, Qwen/Qwen3-32B; Apache-2.0): head_dim
    // 128, untied embeddings, `max_position_embeddings` 40,960. 8.2 B,
    // 14.8 B and 32.8 B parameters, as the model cards give them (non-
    // embedding 6.95 B, 13.2 B and 31.2 B).
    ModelEntry {
        aliases: &["qwen3-8b", "qwen-3-8b"],
        name: "Qwen3-8B",
        layers: 36,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        intermediate: 12288,
        vocab: 151936,
        moe: None,
        max_context: 40960,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["qwen3-14b", "qwen-3-14b"],
        name: "Qwen3-14B",
        layers: 40,
        hidden: 5120,
        heads: 40,
        kv_heads: 8,
        intermediate: 17408,
        vocab: 151936,
        moe: None,
        max_context: 40960,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["qwen3-32b", "qwen-3-32b"],
        name: "Qwen3-32B",
        layers: 64,
        hidden: 5120,
        heads: 64,
        kv_heads: 8,
        intermediate: 25600,
        vocab: 151936,
        moe: None,
        max_context: 40960,
        ..PLAIN
    },
    // Qwen3's mixtures of experts, from their config.json on the Hugging Face
    // hub (Qwen/Qwen3-30B-A3B, Qwen/Qwen3-235B-A22B; Apache-2.0): head_dim
    // 128, no shared expert, `intermediate` is `moe_intermediate_size`,
    // `max_position_embeddings` 40,960. 30.5 B and 235 B parameters in all,
    // 3.3 B and 22 B active, as the model cards give them.
    ModelEntry {
        aliases: &["qwen3-30b-a3b", "qwen-3-30b-a3b"],
        name: "Qwen3-30B-A3B",
        layers: 48,
        hidden: 2048,
        heads: 32,
        kv_heads: 4,
        intermediate: 768,
        vocab: 151936,
        moe: Some(Moe { num_experts: 128, experts_per_token: 8 }),
        max_context: 40960,
        ..PLAIN
    },
    ModelEntry {
        aliases: &["qwen3-235b-a22b", "qwen-3-235b-a22b"],
        name: "Qwen3-235B-A22B",
        layers: 94,
        hidden: 4096,
        heads: 64,
        kv_heads: 4,
        intermediate: 1536,
        vocab: 151936,
        moe: Some(Moe { num_experts: 128, experts_per_token: 8 }),
        max_context: 40960,
        ..PLAIN
    },
    // DeepSeek-V3, from its config.json on the Hugging Face hub
    // (deepseek-ai/DeepSeek-V3; R1 and V3-0324 share it): 61 layers, the
    // first 3 dense (`first_k_dense_replace`, `intermediate_size` 18,432),
    // the other 58 with 256 routed experts, top-8, and 1 shared expert,
    // each of `moe_intermediate_size` 2,048; multi-head latent attention of
    // 128 heads (`kv_lora_rank` 512, `q_lora_rank` 1,536, key heads of
    // 128 + 64 rotary, value heads of 128); vocabulary 129,280,
    // `max_position_embeddings` 163,840. 671 B parameters, 37 B activated,
    // as DeepSeek gives them (the multi-token-prediction layer's 14 B aside).
    ModelEntry {
        aliases: &["deepseek-v3", "deepseek-r1", "deepseek-v3-0324", "deepseek-r1-0528"],
        name: "DeepSeek-V3",
        releases: &[
            ("deepseek-r1", "DeepSeek-R1", 0),
            ("deepseek-v3-0324", "DeepSeek-V3-0324", 0),
            ("deepseek-r1-0528", "DeepSeek-R1-0528", 0),
        ],
        layers: 61,
        hidden: 7168,
        heads: 128,
        kv_heads: 128,
        intermediate: 2048,
        vocab: 129280,
        moe: Some(Moe { num_experts: 256, experts_per_token: 8 }),
        max_context: 163840,
        head_dim: 192,
        shared_intermediate: 2048,
        dense_layers: 3,
        moe_step: 1,
        dense_intermediate: 18432,
        mla: Some(Mla {
            kv_lora_rank: 512,
            q_lora_rank: Some(1536),
            qk_nope_head_dim: 128,
            qk_rope_head_dim: 64,
            v_head_dim: 128,
        }),
        // Published in FP8 (E4M3, 128 × 128 block scales).
        checkpoint: Some(Precision::Fp8),
        sliding: None,
    },
    // GPT-OSS, from its config.json on the Hugging Face hub
    // (openai/gpt-oss-120b, openai/gpt-oss-20b; Apache-2.0): hidden 2,880,
    // 64 query heads of 64 and 8 KV heads, experts of inner size 2,880,
    // top-4 of 128 (120B, 36 layers) or of 32 (20B, 24 layers); every
    // other layer, the first included (`layer_types`), attends within a
    // sliding window of 128 tokens; vocabulary 201,088, untied;
    // `max_position_embeddings` 131,072. Published in MXFP4, the experts
    // alone (`quantization_config`'s `modules_to_not_convert` keeps
    // attention, router and embeddings 16-bit). 117 B and 21 B parameters,
    // 5.1 B and 3.6 B active, as OpenAI's model card gives them. Not
    // modelled: the attention sinks (one learned logit a head) and biases.
    ModelEntry {
        aliases: &["gpt-oss-120b"],
        name: "GPT-OSS-120B",
        layers: 36,
        moe: Some(Moe { num_experts: 128, experts_per_token: 4 }),
        sliding: Some(SlidingWindow { window: 128, layers: 18, chunked: false }),
        ..GPT_OSS
    },
    ModelEntry {
        aliases: &["gpt-oss-20b"],
        name: "GPT-OSS-20B",
        layers: 24,
        moe: Some(Moe { num_experts: 32, experts_per_token: 4 }),
        sliding: Some(SlidingWindow { window: 128, layers: 12, chunked: false }),
        ..GPT_OSS
    },
    // Llama 4, from its config.json on the Hugging Face hub
    // (meta-llama/Llama-4-Maverick-17B-128E-Instruct and
    // Llama-4-Scout-17B-16E-Instruct, their `text_config`; Llama 4
    // Community License): 48 layers, hidden 5,120, 40 query heads of 128 and
    // 8 KV heads; experts of 8,192, top-1, with one shared expert of 8,192
    // in every MoE layer; Maverick's 128 experts in every other layer
    // (`interleave_moe_layer_step` 2), its other 24 dense MLPs of 16,384
    // (`intermediate_size_mlp`), Scout's 16 in every layer; chunked local
    // attention in chunks of 8,192 (`attention_chunk_size`) in all but every
    // fourth layer (`no_rope_layers`); vocabulary 202,048, untied;
    // `max_position_embeddings` 1,048,576 and 10,485,760. 400 B and 109 B
    // parameters, 17 B active each, as Meta's model cards give them.
    ModelEntry {
        aliases: &["llama-4-maverick-17b-128e", "llama-4-maverick", "llama4-maverick"],
        name: "Llama-4-Maverick",
        moe: Some(Moe { num_experts: 128, experts_per_token: 1 }),
        max_context: 1048576,
        dense_layers: 24,
        moe_step: 2,
        dense_intermediate: 16384,
        ..LLAMA_4
    },
    ModelEntry {
        aliases: &["llama-4-scout-17b-16e", "llama-4-scout", "llama4-scout"],
        name: "Llama-4-Scout",
        moe: Some(Moe { num_experts: 16, experts_per_token: 1 }),
        max_context: 10485760,
        ..LLAMA_4
    },
];

/// Suffixes that name a checkpoint variant, not another architecture.
const VARIANT_SUFFIXES: [&str; 12] = [
    "-instruct",
    "-chat",
    "-hf",
    "-base",
    "-fp8",
    "-fp8-dynamic",
    "-awq",
    "-gptq",
    "-int4",
    "-int8",
    "-v0.1",
    "-turbo",
];

impl ModelSpec {
    /// Refuses a request of `prompt` + `output` tokens that the model's
    /// context cannot hold, in the words every refusal of it uses (the
    /// engine's, the HTTP front's before it builds anything for the request,
    /// `bench`'s before a run on the embedded engine).
    pub fn check_context(&self, prompt: u64, output: u64) -> Result<(), String> {
        if prompt.saturating_add(output) <= u64::from(self.max_context) {
            return Ok(());
        }
        Err(format!(
            "{prompt} prompt + {output} output tokens exceed {}'s context of {} tokens; shorten the prompt or \
             lower max_tokens",
            self.name, self.max_context
        ))
    }

    /// The chat template the model's name and vocabulary point to (what
    /// `--chat-template auto` picks).
    pub fn chat_template(&self) -> ChatTemplate {
        ChatTemplate::for_model(&self.name, self.vocab_size)
    }

    /// The name a catalog alias is looked up by: the part after the last
    /// `/`, in lower case with `_` and spaces as `-`, less a leading
    /// `meta-` and variant suffixes (`-instruct`, `-fp8`, …):
    /// `meta-llama/Meta-Llama-3.1-70B-Instruct` → `llama-3.1-70b`.
    pub fn catalog_key(name: &str) -> String {
        let base = name.rsplit('/').next().unwrap_or(name);
        let mut key = normalise(base);
        if let Some(rest) = key.strip_prefix("meta-") {
            key = rest.to_string();
        }
        while let Some(stripped) = VARIANT_SUFFIXES.iter().find_map(|s| key.strip_suffix(s)) {
            key = stripped.to_string();
        }
        key
    }

    /// Looks a shipped model up by name, case-insensitively; Hugging Face ids
    /// work too (`meta-llama/Llama-3.1-8B-Instruct`), and Llama 3 and 3.3 map
    /// to the Llama 3.1 architecture of the same size (Llama 3 with its
    /// 8,192-token context), DeepSeek-R1 to DeepSeek-V3's, each shown by its
    /// own name.
    pub fn lookup(name: &str) -> Result<ModelSpec, Error> {
        let key = ModelSpec::catalog_key(name);
        let entry = MODELS.iter().find(|m| m.aliases.contains(&key.as_str())).ok_or_else(|| Error::UnknownModel {
            name: name.to_string(),
            known: MODELS.iter().map(|m| m.aliases[0]).collect::<Vec<_>>().join(", "),
        })?;
        let mut spec = ModelSpec::from_entry(entry);
        if let Some(&(_, shown, context)) = entry.releases.iter().find(|r| r.0 == key) {
            spec.name = shown.to_string();
            if context > 0 {
                spec.max_context = context;
            }
        }
        Ok(spec)
    }

    /// Every model the catalog ships.
    pub fn catalog() -> Vec<ModelSpec> {
        MODELS.iter().map(ModelSpec::from_entry).collect()
    }

    fn from_entry(e: &ModelEntry) -> ModelSpec {
        ModelSpec {
            name: e.name.to_string(),
            num_layers: e.layers,
            hidden_size: e.hidden,
            num_heads: e.heads,
            num_kv_heads: e.kv_heads,
            head_dim: e.head_dim,
            intermediate_size: e.intermediate,
            vocab_size: e.vocab,
            tie_word_embeddings: false,
            moe: e.moe,
            max_context: e.max_context,
            shared_expert_intermediate_size: e.shared_intermediate,
            dense_mlp_layers: e.dense_layers,
            dense_mlp_at: if e.moe_step > 1 {
                (0..e.layers).filter(|i| !(i + 1).is_multiple_of(e.moe_step)).collect()
            } else {
                Vec::new()
            },
            dense_intermediate_size: e.dense_intermediate,
            mla: e.mla,
            checkpoint_precision: e.checkpoint,
            unmodelled_quantization: None,
            sliding_window: e.sliding,
        }
    }

    /// Reads a Hugging Face `config.json` from disk.
    pub fn from_hf_config(path: &Path) -> Result<ModelSpec, Error> {
        // At most a settings file's cap, from a regular file: not /dev/zero.
        let text = goodput_core::util::input::read_text(
            path,
            "the model's config.json",
            goodput_core::util::input::SETTINGS_CAP,
        )
        .map_err(|e| Error::ModelConfigRead { path: path.to_path_buf(), message: e.to_string() })?;
        let fallback_name = path
            .parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "custom".to_string());
        Self::from_hf_config_str(&text, &fallback_name).map_err(|e| relabel(e, &path.display().to_string()))
    }

    /// Parses the text of a Hugging Face `config.json`. `fallback_name` names
    /// the model when the config carries no `_name_or_path`.
    ///
    /// Read: `num_hidden_layers`, `hidden_size`, `num_attention_heads`,
    /// `num_key_value_heads` (default: the attention heads), `intermediate_size`
    /// (or `moe_intermediate_size` for experts), `vocab_size`, `head_dim`
    /// (default hidden / heads), `tie_word_embeddings` (default false, as the
    /// Llama, Qwen2 and Mistral configs default it), `max_position_embeddings`,
    /// and for a mixture of experts:
    ///
    /// - `num_local_experts`, `num_experts` or `n_routed_experts`, with
    ///   `num_experts_per_tok`;
    /// - shared experts, always active: DeepSeek's `n_shared_experts` (each of
    ///   `moe_intermediate_size`), Qwen-MoE's `shared_expert_intermediate_size`;
    /// - which layers are dense MLPs of `intermediate_size`, as DeepSeek's and
    ///   Qwen-MoE's modelling code decides it: layer i is a mixture of experts
    ///   when i ≥ `first_k_dense_replace`, i % `moe_layer_freq` = 0,
    ///   (i + 1) % `decoder_sparse_step` = 0 and i is not in `mlp_only_layers`.
    ///
    /// `kv_lora_rank` makes the attention multi-head latent attention
    /// (DeepSeek-V2 and V3), with `q_lora_rank` (absent or null: full-rank
    /// queries), `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim`.
    /// Multimodal configs are read from their `text_config`, a key it lacks
    /// (or holds as null) from the top level, where such configs keep
    /// `quantization_config` and at times `vocab_size`; a top-level key
    /// that is null counts as absent. Not read: biases,
    /// norms and Qwen-MoE's one-output shared-expert gate (a fraction of a
    /// percent), multi-token-prediction layers (`num_nextn_predict_layers`:
    /// vLLM loads them only to draft speculative tokens) and
    /// `quantization_config` is read for the checkpoint's width
    /// ([`ModelSpec::checkpoint_precision`]), which `--precision auto` runs.
    pub fn from_hf_config_str(text: &str, fallback_name: &str) -> Result<ModelSpec, Error> {
        const MAX_PARAMS: f64 = 1e15;
        // More layers than any model has: the layout of a mixture of experts
        // is counted layer by layer.
        const MAX_MOE_LAYERS: u32 = 100_000;
        let invalid = |message: String| Error::ModelConfigInvalid { source_name: fallback_name.to_string(), message };
        // A byte-order mark before the JSON (an editor's on Windows) is not the config's.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root: serde_json::Value = serde_json::from_str(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
        let top = root.as_object().ok_or_else(|| invalid("the top level is not a JSON object".into()))?;
        let (merged, nested) = text_config_over(top);
        let cfg = merged.as_ref().unwrap_or(top);
        // A count that may be 0 (`first_k_dense_replace`, `n_shared_experts`).
        let get0 =
            |key: &str| -> Result<Option<u32>, Error> {
                match cfg.get(key) {
                    None | Some(serde_json::Value::Null) => Ok(None),
                    Some(v) => v.as_u64().filter(|&n| n <= u32::MAX as u64).map(|n| Some(n as u32)).ok_or_else(|| {
                        invalid(format!("`{key}` must be a non-negative integer, got {}", shown_value(v)))
                    }),
                }
            };
        let get = |key: &str| -> Result<Option<u32>, Error> {
            match cfg.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n > 0 && n <= u32::MAX as u64)
                    .map(|n| Some(n as u32))
                    .ok_or_else(|| invalid(format!("`{key}` must be a positive integer, got {}", shown_value(v)))),
            }
        };
        let need = |key: &str| -> Result<u32, Error> {
            get(key)?.ok_or_else(|| {
                invalid(if nested {
                    format!("`{key}` is missing (looked for in `text_config`, then at the top level)")
                } else {
                    format!("`{key}` is missing")
                })
            })
        };

        let num_layers = need("num_hidden_layers")?;
        let hidden_size = need("hidden_size")?;
        let num_heads = need("num_attention_heads")?;
        let num_kv_heads = get("num_key_value_heads")?.unwrap_or(num_heads);
        let mla = match get("kv_lora_rank")? {
            // The other fields of latent attention without its rank: a
            // config Hugging Face's code cannot run (it had been read as
            // grouped-query attention of hidden / heads).
            None => {
                let latent = ["qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"];
                if let Some(key) = latent.iter().find(|k| cfg.get(**k).is_some_and(|v| !v.is_null())) {
                    return Err(invalid(format!(
                        "`{key}` is given but `kv_lora_rank` is not: multi-head latent attention needs its \
                         rank (DeepSeek-V3's is 512); give it, or leave out the latent fields"
                    )));
                }
                None
            }
            Some(kv_lora_rank) => {
                let part = |key: &str| -> Result<u32, Error> {
                    get(key)?.ok_or_else(|| {
                        invalid(format!("`{key}` is missing: multi-head latent attention (`kv_lora_rank`) needs it"))
                    })
                };
                Some(Mla {
                    kv_lora_rank,
                    q_lora_rank: get("q_lora_rank")?,
                    qk_nope_head_dim: part("qk_nope_head_dim")?,
                    qk_rope_head_dim: part("qk_rope_head_dim")?,
                    v_head_dim: part("v_head_dim")?,
                })
            }
        };
        let head_dim = match (mla, get("head_dim")?) {
            (Some(a), _) => a.qk_nope_head_dim.checked_add(a.qk_rope_head_dim).ok_or_else(|| {
                invalid(format!(
                    "qk_nope_head_dim {} + qk_rope_head_dim {} is past any model's head",
                    a.qk_nope_head_dim, a.qk_rope_head_dim
                ))
            })?,
            (None, Some(h)) => h,
            (None, None) if hidden_size % num_heads == 0 => hidden_size / num_heads,
            (None, None) => {
                return Err(invalid(format!(
                    "`head_dim` is missing and hidden_size {hidden_size} is not a multiple of \
                     num_attention_heads {num_heads}"
                )))
            }
        };
        // Latent attention caches no per-head keys: its KV-head count is moot.
        if mla.is_none() && num_heads % num_kv_heads != 0 {
            return Err(invalid(format!(
                "num_attention_heads {num_heads} is not a multiple of num_key_value_heads {num_kv_heads}"
            )));
        }
        // The experts, by whichever name the config gives them; names that
        // disagree are refused (the first had won, a 0 making DeepSeek-V3
        // dense).
        let mut experts: Option<(&str, u32)> = None;
        for key in ["num_local_experts", "num_experts", "n_routed_experts"] {
            if let Some(n) = get0(key)? {
                match experts {
                    Some((first, m)) if m != n => {
                        return Err(invalid(format!(
                            "`{first}` is {m} but `{key}` is {n}: give the experts' count once, or the same in both"
                        )))
                    }
                    Some(_) => {}
                    None => experts = Some((key, n)),
                }
            }
        }
        let experts = experts.map(|(_, n)| n);
        let moe = match experts {
            Some(n) if n > 1 => {
                let k = get("num_experts_per_tok")?
                    .ok_or_else(|| invalid("a mixture of experts needs `num_experts_per_tok`".into()))?;
                if k > n {
                    return Err(invalid(format!("num_experts_per_tok {k} exceeds the {n} experts")));
                }
                Some(Moe { num_experts: n, experts_per_token: k })
            }
            _ => None,
        };
        // Which layers of a mixture of experts are dense.
        let (moe, dense_mlp_layers, dense_mlp_at) = match moe {
            None => (None, 0, Vec::new()),
            Some(m) => {
                let first_dense = get0("first_k_dense_replace")?.unwrap_or(0);
                let freq = get("moe_layer_freq")?.unwrap_or(1);
                // Qwen-MoE's and Llama 4's names for one rule.
                let step = get("decoder_sparse_step")?.or(get("interleave_moe_layer_step")?).unwrap_or(1);
                // A set: a layer is looked up in it once each (a list of
                // millions had taken seconds a layer).
                let mlp_only: std::collections::HashSet<u64> = match cfg.get("mlp_only_layers") {
                    None | Some(serde_json::Value::Null) => Default::default(),
                    Some(serde_json::Value::Array(a)) => a
                        .iter()
                        .enumerate()
                        .map(|(k, i)| {
                            i.as_u64().ok_or_else(|| {
                                invalid(format!(
                                    "`mlp_only_layers` must be a list of layer indices: its element {k} is {}",
                                    shown_value(i)
                                ))
                            })
                        })
                        .collect::<Result<_, Error>>()?,
                    Some(v) => {
                        return Err(invalid(format!(
                            "`mlp_only_layers` must be a list of layer indices, got {}",
                            shown_value(v)
                        )))
                    }
                };
                let dense_at: Vec<u32> = if first_dense == 0 && freq == 1 && step == 1 && mlp_only.is_empty() {
                    Vec::new()
                } else if num_layers > MAX_MOE_LAYERS {
                    return Err(invalid(format!(
                        "num_hidden_layers {num_layers} is past any mixture of experts' (at most {MAX_MOE_LAYERS})"
                    )));
                } else {
                    let is_moe = |i: u32| {
                        i >= first_dense
                            && i.is_multiple_of(freq)
                            && (i + 1).is_multiple_of(step)
                            && !mlp_only.contains(&u64::from(i))
                    };
                    (0..num_layers).filter(|&i| !is_moe(i)).collect()
                };
                let dense = dense_at.len() as u32;
                // The first ones are said by their number alone.
                let placed = dense_at.iter().enumerate().any(|(k, &i)| i != k as u32);
                // No layer left with experts: a dense model.
                if dense == num_layers {
                    (None, 0, Vec::new())
                } else {
                    (Some(m), dense, if placed { dense_at } else { Vec::new() })
                }
            }
        };
        let intermediate_size = match (moe, get("moe_intermediate_size")?) {
            (Some(_), Some(m)) => m,
            _ => need("intermediate_size")?,
        };
        let dense_intermediate_size = if dense_mlp_layers > 0 {
            // Llama 4's dense layers have a size of their own.
            get("intermediate_size_mlp")?.or(get("intermediate_size")?).ok_or_else(|| {
                invalid(format!(
                    "`intermediate_size` is missing: {dense_mlp_layers} of the {num_layers} layers are dense MLPs \
                     of that size"
                ))
            })?
        } else {
            0
        };
        let shared_expert_intermediate_size = match moe {
            None => 0,
            Some(_) => {
                // Llama 4's MoE layers each have one shared expert of the
                // routed ones' size; its config names none.
                let llama4 = cfg.get("model_type").and_then(|t| t.as_str()).is_some_and(|t| t.starts_with("llama4"));
                let shared = get0("n_shared_experts")?.unwrap_or(u32::from(llama4));
                let deepseek = u64::from(shared) * u64::from(intermediate_size);
                let qwen = u64::from(get0("shared_expert_intermediate_size")?.unwrap_or(0));
                u32::try_from(deepseek + qwen).map_err(|_| {
                    invalid(format!(
                        "the shared experts' inner size ({} shared of {intermediate_size}, plus \
                         shared_expert_intermediate_size) is past any model's",
                        deepseek / u64::from(intermediate_size)
                    ))
                })?
            }
        };
        let quantization = cfg.get("quantization_config").filter(|q| !q.is_null());
        let checkpoint_precision = quantization.and_then(checkpoint_precision);
        let unmodelled_quantization = match (quantization, checkpoint_precision) {
            (Some(q), None) => Some(quantization_name(q)),
            _ => None,
        };
        let tie_word_embeddings = match cfg.get("tie_word_embeddings") {
            None | Some(serde_json::Value::Null) => false,
            Some(v) => v.as_bool().ok_or_else(|| {
                invalid(format!("`tie_word_embeddings` must be true or false, got {}", shown_value(v)))
            })?,
        };
        let vocab_size = need("vocab_size")?;
        let max_context = get("max_position_embeddings")?.unwrap_or(131072);
        let sliding_window = sliding_window(cfg, num_layers, max_context, &invalid)?;
        let name = root
            .get("_name_or_path")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback_name)
            .to_string();
        let spec = ModelSpec {
            name,
            num_layers,
            hidden_size,
            num_heads,
            num_kv_heads,
            head_dim,
            intermediate_size,
            vocab_size,
            tie_word_embeddings,
            moe,
            max_context,
            shared_expert_intermediate_size,
            dense_mlp_layers,
            dense_mlp_at,
            dense_intermediate_size,
            mla,
            checkpoint_precision,
            unmodelled_quantization,
            sliding_window,
        };
        // Sizes whose product passes any model's (a hidden_size of 2^31 had
        // wrapped the parameter count, and the model "fit" on one GPU).
        let params = spec.params_f64();
        if params > MAX_PARAMS {
            return Err(invalid(format!(
                "its sizes make a model of {params:.1e} parameters, past any model (at most {MAX_PARAMS:e}): check \
                 hidden_size, intermediate_size, the head counts, num_hidden_layers and vocab_size{}",
                if mla.is_some() { ", and the latent attention's ranks and head sizes" } else { "" }
            )));
        }
        Ok(spec)
    }

    /// Every parameter, counted in floating point as the integer counts below
    /// count them: what [`ModelSpec::from_hf_config_str`] bounds before those
    /// can overflow.
    fn params_f64(&self) -> f64 {
        let f = f64::from;
        let (d, h) = (f(self.hidden_size), f(self.num_heads));
        let attention = match self.mla {
            Some(a) => {
                let qk = f(a.qk_nope_head_dim) + f(a.qk_rope_head_dim);
                let q = match a.q_lora_rank {
                    Some(r) => d * f(r) + f(r) * h * qk,
                    None => d * h * qk,
                };
                let kv = d * (f(a.kv_lora_rank) + f(a.qk_rope_head_dim))
                    + f(a.kv_lora_rank) * h * (f(a.qk_nope_head_dim) + f(a.v_head_dim));
                q + kv + h * f(a.v_head_dim) * d
            }
            None => 2.0 * d * (h + f(self.num_kv_heads)) * f(self.head_dim),
        };
        let mlp = |inner: u32| 3.0 * d * f(inner);
        let mlps = match self.moe {
            None => f(self.num_layers) * mlp(self.intermediate_size),
            Some(m) => {
                let e = f(m.num_experts);
                f(self.moe_layers())
                    * (e * mlp(self.intermediate_size) + d * e + mlp(self.shared_expert_intermediate_size))
                    + f(self.dense_mlp_layers) * mlp(self.dense_intermediate_size)
            }
        };
        f(self.num_layers) * attention + mlps + 2.0 * f(self.vocab_size) * d
    }

    /// The attention's parameters of one layer: the q, k, v and o projections,
    /// or with latent attention the query's (down and up when `q_lora_rank`
    /// is set), the keys' and values' (down to the latent and the rotary key,
    /// then up to the heads) and the output's.
    pub fn attention_params_per_layer(&self) -> u64 {
        let d = self.hidden_size as u64;
        let heads = self.num_heads as u64;
        if let Some(a) = self.mla {
            let (r, rope) = (a.kv_lora_rank as u64, a.qk_rope_head_dim as u64);
            let (nope, v) = (a.qk_nope_head_dim as u64, a.v_head_dim as u64);
            let q = match a.q_lora_rank {
                Some(q_rank) => d * q_rank as u64 + q_rank as u64 * heads * (nope + rope),
                None => d * heads * (nope + rope),
            };
            let kv = d * (r + rope) + r * heads * (nope + v);
            return q + kv + heads * v * d;
        }
        let q = heads * self.head_dim as u64;
        let kv = self.num_kv_heads as u64 * self.head_dim as u64;
        d * q + 2 * d * kv + q * d
    }

    /// One gated MLP (gate, up and down projections): one routed expert for MoE.
    pub fn mlp_params_per_expert(&self) -> u64 {
        3 * self.hidden_size as u64 * self.intermediate_size as u64
    }

    /// The gated MLP of one of a mixture of experts' dense layers.
    pub fn dense_mlp_params_per_layer(&self) -> u64 {
        3 * self.hidden_size as u64 * self.dense_intermediate_size as u64
    }

    /// The shared experts of one MoE layer (gated MLPs, always active).
    pub fn shared_expert_params_per_layer(&self) -> u64 {
        3 * self.hidden_size as u64 * self.shared_expert_intermediate_size as u64
    }

    /// Every MLP parameter of one MoE layer (all routed experts, the router
    /// and the shared experts), or of one layer of a dense model.
    pub fn mlp_params_per_layer(&self) -> u64 {
        match self.moe {
            None => self.mlp_params_per_expert(),
            Some(m) => {
                m.num_experts as u64 * self.mlp_params_per_expert()
                    + self.hidden_size as u64 * m.num_experts as u64
                    + self.shared_expert_params_per_layer()
            }
        }
    }

    /// Layers whose MLP is a mixture of experts: every layer of Mixtral's and
    /// Qwen3's, DeepSeek-V3's but its first three, none of a dense model's.
    pub fn moe_layers(&self) -> u32 {
        match self.moe {
            None => 0,
            Some(_) => self.num_layers.saturating_sub(self.dense_mlp_layers),
        }
    }

    /// The dense layers of a mixture of experts among the layers `range`
    /// (a pipeline stage's): where [`dense_mlp_at`](Self::dense_mlp_at)
    /// places them, else the first `dense_mlp_layers`. 0 for a dense model.
    pub fn dense_mlp_layers_in(&self, range: std::ops::Range<u32>) -> u32 {
        if self.moe.is_none() {
            return 0;
        }
        if self.dense_mlp_at.is_empty() {
            return self.dense_mlp_layers.min(range.end).saturating_sub(range.start);
        }
        self.dense_mlp_at.iter().filter(|i| range.contains(i)).count() as u32
    }

    /// One routed expert's parameters in every MoE layer together: what a
    /// step reads per expert its tokens reach, and what expert parallelism
    /// spreads (times the experts).
    pub fn expert_params_all_layers(&self) -> u64 {
        self.mlp_params_per_expert() * self.moe_layers() as u64
    }

    /// The MLPs of every layer: for a mixture of experts, its MoE layers'
    /// and its dense layers'.
    fn mlp_params(&self) -> u64 {
        match self.moe {
            None => self.num_layers as u64 * self.mlp_params_per_expert(),
            Some(_) => {
                self.moe_layers() as u64 * self.mlp_params_per_layer()
                    + self.dense_mlp_layers as u64 * self.dense_mlp_params_per_layer()
            }
        }
    }

    /// Embedding table plus LM head (counted once when tied).
    pub fn embedding_params(&self) -> u64 {
        let table = self.vocab_size as u64 * self.hidden_size as u64;
        if self.tie_word_embeddings {
            table
        } else {
            2 * table
        }
    }

    /// Non-embedding parameters, all experts included: what memory holds.
    pub fn body_params(&self) -> u64 {
        self.num_layers as u64 * self.attention_params_per_layer() + self.mlp_params()
    }

    /// Non-embedding parameters one token passes through (`P` of docs/simulator.md):
    /// for MoE only the top-k routed experts, the router and the shared
    /// experts of each MoE layer, and the dense layers' MLPs.
    pub fn active_params(&self) -> u64 {
        let mlp = match self.moe {
            None => self.num_layers as u64 * self.mlp_params_per_expert(),
            Some(m) => {
                let moe_layer = m.experts_per_token as u64 * self.mlp_params_per_expert()
                    + self.hidden_size as u64 * m.num_experts as u64
                    + self.shared_expert_params_per_layer();
                self.moe_layers() as u64 * moe_layer + self.dense_mlp_layers as u64 * self.dense_mlp_params_per_layer()
            }
        };
        self.num_layers as u64 * self.attention_params_per_layer() + mlp
    }

    pub fn total_params(&self) -> u64 {
        self.body_params() + self.embedding_params()
    }

    /// Weight bytes `W` on all GPUs together: body at the precision's width,
    /// embeddings and LM head at 16 bits; under MXFP4, a mixture of experts'
    /// routed experts alone at its width, the rest of the body 16-bit.
    pub fn weight_bytes(&self, precision: Precision) -> f64 {
        let (b, rest_b) = (precision.bytes_per_weight(), self.non_expert_bytes_per_weight(precision));
        if rest_b == b {
            return self.body_params() as f64 * b + self.embedding_params() as f64 * 2.0;
        }
        let experts = match self.moe {
            Some(m) => self.expert_params_all_layers() as f64 * f64::from(m.num_experts),
            None => 0.0,
        };
        let rest = self.body_params() as f64 - experts;
        experts * b + rest * rest_b + self.embedding_params() as f64 * 2.0
    }

    /// Bytes per weight of the body's parts that are not routed experts:
    /// 16-bit under MXFP4 for a mixture of experts (as GPT-OSS ships its
    /// attention and router), the precision's width otherwise.
    pub fn non_expert_bytes_per_weight(&self, precision: Precision) -> f64 {
        if precision == Precision::Mxfp4 && self.moe.is_some() {
            2.0
        } else {
            precision.bytes_per_weight()
        }
    }

    /// KV-cache bytes per token on one GPU: 2·L·H_kv·h_d·b_kv split over TP.
    /// Past TP = H_kv each GPU keeps a replica of its head, as vLLM does.
    /// With latent attention L·(kv_lora_rank + qk_rope_head_dim)·b_kv, the
    /// latent and the rotary key, on every GPU of the TP group: vLLM keeps
    /// the whole latent cache on each rank.
    pub fn kv_bytes_per_token_per_gpu(&self, kv: KvCacheDtype, tp: u32) -> f64 {
        if let Some(a) = self.mla {
            let latent = a.kv_lora_rank as f64 + a.qk_rope_head_dim as f64;
            return self.num_layers as f64 * latent * kv.bytes_per_element();
        }
        let heads_per_gpu = self.num_kv_heads.div_ceil(tp.max(1));
        2.0 * self.num_layers as f64 * heads_per_gpu as f64 * self.head_dim as f64 * kv.bytes_per_element()
    }

    /// The layers a KV-cache block's bytes are counted over: the
    /// full-attention ones, or all of them where every layer slides. A
    /// sliding layer holds only its window (the blocks [`ModelSpec::kv_blocks`]
    /// counts), as vLLM's hybrid KV-cache manager frees the blocks a window
    /// has left.
    pub fn kv_pool_layers(&self) -> u32 {
        match self.sliding_window {
            Some(s) if s.layers < self.num_layers => self.num_layers - s.layers,
            _ => self.num_layers,
        }
    }

    /// KV-cache bytes per token on one GPU of the layers a block counts
    /// ([`ModelSpec::kv_pool_layers`]): what sizes the cache's blocks.
    pub fn kv_pool_bytes_per_token_per_gpu(&self, kv: KvCacheDtype, tp: u32) -> f64 {
        self.kv_bytes_per_token_per_gpu(kv, tp) * f64::from(self.kv_pool_layers()) / f64::from(self.num_layers.max(1))
    }

    /// How many blocks (each of [`ModelSpec::kv_pool_layers`]' bytes) a
    /// sequence takes.
    pub fn kv_blocks(&self) -> KvBlocks {
        let per_block = match self.sliding_window {
            Some(s) if s.layers < self.num_layers => Some(f64::from(s.layers) / f64::from(self.kv_pool_layers())),
            _ => None,
        };
        KvBlocks { sliding: self.sliding_window, per_block }
    }

    /// [`KvBlocks::blocks_for`] of this model.
    pub fn kv_blocks_for(&self, tokens: u32, block_size: u32) -> u32 {
        self.kv_blocks().blocks_for(tokens, block_size)
    }

    /// The sliding window and the share of the layers that slide, where
    /// some do.
    pub fn sliding_share(&self) -> Option<(SlidingWindow, f64)> {
        let s = self.sliding_window?;
        Some((s, f64::from(s.layers.min(self.num_layers)) / f64::from(self.num_layers.max(1))))
    }

    /// Attention flops per (query token, cached token) pair, all layers and
    /// heads: 4·L·H·h_d (q·k and p·v). With latent attention, as the absorbed
    /// form vLLM decodes with computes it: L·H·(2·(kv_lora_rank + rope) +
    /// 2·kv_lora_rank), the scores against the latent and its rotary key, and
    /// the weighted sum of latents; a prefill's pairs cost
    /// [`Self::prefill_attention_flops_per_pair`].
    pub fn attention_flops_per_pair(&self) -> f64 {
        if let Some(a) = self.mla {
            let (r, rope) = (a.kv_lora_rank as f64, a.qk_rope_head_dim as f64);
            return self.num_layers as f64 * self.num_heads as f64 * (2.0 * (r + rope) + 2.0 * r);
        }
        4.0 * self.num_layers as f64 * self.num_heads as f64 * self.head_dim as f64
    }

    /// A prefill's attention flops per pair where they differ from a
    /// decode's: with latent attention vLLM prefills in the non-absorbed
    /// form, L·H·(2·(nope + rope) + 2·v), each head's own keys and values
    /// (for DeepSeek-V3 640 flops a head against the absorbed form's 2,176);
    /// the up-projection of a cached prefix's latents that this form needs
    /// is left out. `None`: the same as a decode's.
    pub fn prefill_attention_flops_per_pair(&self) -> Option<f64> {
        let a = self.mla?;
        let per_head = 2.0 * f64::from(a.qk_nope_head_dim + a.qk_rope_head_dim) + 2.0 * f64::from(a.v_head_dim);
        Some(self.num_layers as f64 * self.num_heads as f64 * per_head)
    }
}

/// A config.json's sliding-window attention: its `sliding_window` (the
/// tokens a sliding layer attends to) over the layers that
///
/// - `layer_types` marks `sliding_attention` (GPT-OSS, Gemma 3 in newer
///   exports); other types (`full_attention`, and ones the engine does not
///   model, as Qwen3-Next's `linear_attention`) count as full attention;
/// - else `sliding_window_pattern` n leaves sliding: every layer but each
///   n-th (Gemma 3's 6, Cohere2's 4);
/// - else, for `model_type` `gemma2`, every other layer, the first
///   included, as vLLM's Gemma 2 places them;
/// - else, with `use_sliding_window` true, the layers from
///   `max_window_layers` on (Qwen2's; its released configs set it false:
///   none);
/// - else all of them (Mistral-7B-v0.1, Phi-3).
///
/// None where `sliding_window` is absent or null, no layer slides, or the
/// window holds the whole context (`max_position_embeddings`).
///
/// Chunked local attention comes first: `attention_chunk_size` over the
/// layers `no_rope_layers` marks 1 (by default all but every fourth),
/// Llama 4's.
fn sliding_window(
    cfg: &serde_json::Map<String, serde_json::Value>,
    num_layers: u32,
    max_context: u32,
    invalid: &dyn Fn(String) -> Error,
) -> Result<Option<SlidingWindow>, Error> {
    let number = |key: &str| -> Result<Option<u64>, Error> {
        match cfg.get(key) {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| invalid(format!("`{key}` must be a non-negative integer, got {}", shown_value(v)))),
        }
    };
    if let Some(chunk) = number("attention_chunk_size")?.filter(|&c| c > 0) {
        // Llama 4: its rotary layers (`no_rope_layers` 1) attend in chunks,
        // by default all but every fourth, as Hugging Face's code sets it.
        let layers = match cfg.get("no_rope_layers") {
            None | Some(serde_json::Value::Null) => num_layers - num_layers / 4,
            Some(serde_json::Value::Array(a)) if a.len() == num_layers as usize => {
                let mut rotary = 0;
                for (k, v) in a.iter().enumerate() {
                    match v.as_u64() {
                        Some(0) => {}
                        Some(1) => rotary += 1,
                        _ => {
                            return Err(invalid(format!(
                                "`no_rope_layers` must be a list of 0 and 1, a layer each: its element {k} is {}",
                                shown_value(v)
                            )))
                        }
                    }
                }
                rotary
            }
            Some(v) => {
                return Err(invalid(format!(
                    "`no_rope_layers` must be a list of 0 and 1, one for each of the {num_layers} layers, got {}",
                    shown_value(v)
                )))
            }
        };
        if layers == 0 || chunk >= u64::from(max_context) {
            return Ok(None);
        }
        return Ok(Some(SlidingWindow { window: chunk as u32, layers, chunked: true }));
    }
    let types = match cfg.get("layer_types") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Array(a)) => {
            if a.len() != num_layers as usize {
                return Err(invalid(format!(
                    "`layer_types` names {} layers but num_hidden_layers is {num_layers}: give one type a layer",
                    a.len()
                )));
            }
            let mut sliding = 0u32;
            for (k, t) in a.iter().enumerate() {
                match t.as_str() {
                    Some("sliding_attention") => sliding += 1,
                    Some(_) => {}
                    None => {
                        return Err(invalid(format!(
                            "`layer_types` must be a list of names (\"sliding_attention\", \"full_attention\"): its \
                             element {k} is {}",
                            shown_value(t)
                        )))
                    }
                }
            }
            Some(sliding)
        }
        Some(v) => {
            return Err(invalid(format!("`layer_types` must be a list of layer types, got {}", shown_value(v))));
        }
    };
    let window = match number("sliding_window")? {
        Some(w) if w > 0 => w,
        Some(_) => return Err(invalid("`sliding_window` is 0: give the window's tokens, or null for none".into())),
        None if types.is_some_and(|n| n > 0) => {
            return Err(invalid(
                "`layer_types` marks sliding_attention layers but `sliding_window` is missing: give the window's \
                 tokens"
                    .into(),
            ))
        }
        None => return Ok(None),
    };
    let model_type = cfg.get("model_type").and_then(|t| t.as_str()).unwrap_or("");
    let layers = if let Some(n) = types {
        n
    } else if let Some(pattern) = number("sliding_window_pattern")?.filter(|&p| p > 0) {
        num_layers - (u64::from(num_layers) / pattern) as u32
    } else if model_type == "gemma2" {
        num_layers.div_ceil(2)
    } else {
        match cfg.get("use_sliding_window").and_then(|u| u.as_bool()) {
            Some(false) => 0,
            Some(true) => {
                let from = number("max_window_layers")?.unwrap_or(0).min(u64::from(num_layers)) as u32;
                num_layers - from
            }
            None => num_layers,
        }
    };
    if layers == 0 || window >= u64::from(max_context) {
        return Ok(None);
    }
    Ok(Some(SlidingWindow { window: window as u32, layers, chunked: false }))
}

/// The weights' width a config.json's `quantization_config` names, where
/// it is one the engine models: FP8 (`quant_method` `fp8` or
/// `fbgemm_fp8`; ModelOpt's `quant_algo` `FP8`), NVFP4 (ModelOpt's
/// `NVFP4`), 4- or 8-bit weights alone (AWQ, GPTQ and their Marlin
/// kernels, by `bits`), and compressed-tensors' one group of weights
/// (`num_bits` 8 of type `float`, or 4 or 8 of type `int`), and MXFP4
/// (`quant_method` `mxfp4`, GPT-OSS's experts). Anything else
/// (bitsandbytes, mixed schemes) is left to `--precision`.
fn checkpoint_precision(q: &serde_json::Value) -> Option<Precision> {
    let text = |v: &serde_json::Value, key: &str| v.get(key).and_then(|m| m.as_str()).map(str::to_ascii_lowercase);
    // A count, or one written as a string ("bits": "4", as some exports do).
    let bits = |v: &serde_json::Value, key: &str| {
        v.get(key).and_then(|b| b.as_u64().or_else(|| b.as_str().and_then(|s| s.trim().parse().ok())))
    };
    let weight_only = |b: Option<u64>| match b {
        Some(4) => Some(Precision::Int4),
        Some(8) => Some(Precision::Int8),
        _ => None,
    };
    match text(q, "quant_method")?.as_str() {
        "fp8" | "fbgemm_fp8" => Some(Precision::Fp8),
        // GPT-OSS's: the experts in MXFP4, `modules_to_not_convert` 16-bit.
        "mxfp4" => Some(Precision::Mxfp4),
        "awq" | "awq_marlin" | "gptq" | "gptq_marlin" => weight_only(bits(q, "bits").or(bits(q, "w_bit"))),
        "modelopt" => match text(q, "quant_algo")?.as_str() {
            "fp8" => Some(Precision::Fp8),
            "nvfp4" => Some(Precision::Fp4),
            _ => None,
        },
        "compressed-tensors" => {
            // Groups that all quantize their weights alike are one scheme.
            let groups = q.get("config_groups")?.as_object()?;
            let widths = groups
                .values()
                .map(|group| {
                    let w = group.get("weights")?;
                    match (text(w, "type")?.as_str(), bits(w, "num_bits")?) {
                        ("float", 8) => Some(Precision::Fp8),
                        ("int", b) => weight_only(Some(b)),
                        _ => None,
                    }
                })
                .collect::<Option<Vec<Precision>>>()?;
            match widths[..] {
                [first, ref rest @ ..] if rest.iter().all(|&p| p == first) => Some(first),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A `quantization_config` [`checkpoint_precision`] does not model, named
/// for a note: its `quant_method` (with `bits` where given), else its value.
fn quantization_name(q: &serde_json::Value) -> String {
    match q.get("quant_method").and_then(|m| m.as_str()) {
        Some(m) => match q.get("bits").or_else(|| q.get("w_bit")) {
            Some(b) => format!("{} ({} bits)", shown_value(&serde_json::Value::String(m.into())), shown_value(b)),
            None => shown_value(&serde_json::Value::String(m.into())),
        },
        None => shown_value(q),
    }
}

/// A multimodal config's text model: its `text_config`, each key it lacks
/// (or holds as null) taken from the top level, where such configs keep
/// `quantization_config` (Llama 4's, Qwen-VL's quantized checkpoints) and
/// at times `vocab_size`. `None` where the top level is the text model (it
/// gives `num_hidden_layers`) or there is no `text_config`; the flag says
/// whether `text_config` was read.
fn text_config_over(
    top: &serde_json::Map<String, serde_json::Value>,
) -> (Option<serde_json::Map<String, serde_json::Value>>, bool) {
    let given = |m: &serde_json::Map<String, serde_json::Value>, k: &str| m.get(k).is_some_and(|v| !v.is_null());
    if given(top, "num_hidden_layers") {
        return (None, false);
    }
    let Some(inner) = top.get("text_config").and_then(|v| v.as_object()) else { return (None, false) };
    let mut merged = inner.clone();
    for (k, v) in top {
        if matches!(k.as_str(), "text_config" | "vision_config" | "audio_config") || v.is_null() {
            continue;
        }
        if !given(&merged, k) {
            merged.insert(k.clone(), v.clone());
        }
    }
    (Some(merged), true)
}

/// A config's value in a message: itself where short, its start where not
/// (a list of a million layers had been echoed whole).
fn shown_value(v: &serde_json::Value) -> String {
    const MOST: usize = 80;
    let text = v.to_string();
    match text.char_indices().nth(MOST) {
        Some((at, _)) => format!("{}… ({} characters)", &text[..at], text.chars().count()),
        None => text,
    }
}

fn relabel(e: Error, source: &str) -> Error {
    match e {
        Error::ModelConfigInvalid { message, .. } => {
            Error::ModelConfigInvalid { source_name: source.to_string(), message }
        }
        other => other,
    }
}
