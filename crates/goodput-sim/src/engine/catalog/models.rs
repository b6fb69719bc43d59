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

/// A decoder-only transformer, as much of it as the step-time model needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub name: String,
    pub num_layers: u32,
    pub hidden_size: u32,
    pub num_heads: u32,
    pub num_kv_heads: u32,
    pub head_dim: u32,
    /// The gated MLP's inner size (per expert for MoE).
    pub intermediate_size: u32,
    pub vocab_size: u32,
    pub tie_word_embeddings: bool,
    pub moe: Option<Moe>,
    /// The longest prompt plus output the model accepts.
    pub max_context: u32,
}

struct ModelEntry {
    aliases: &'static [&'static str],
    name: &'static str,
    layers: u32,
    hidden: u32,
    heads: u32,
    kv_heads: u32,
    intermediate: u32,
    vocab: u32,
    moe: Option<Moe>,
    max_context: u32,
}

const MODELS: [ModelEntry; 8] = [
    ModelEntry {
        aliases: &["llama-3.1-8b", "llama-3-8b", "llama3.1-8b", "llama3-8b"],
        name: "Llama-3.1-8B",
        layers: 32,
        hidden: 4096,
        heads: 32,
        kv_heads: 8,
        intermediate: 14336,
        vocab: 128256,
        moe: None,
        max_context: 131072,
    },
    ModelEntry {
        aliases: &["llama-3.1-70b", "llama-3.3-70b", "llama-3-70b", "llama3.1-70b", "llama3.3-70b", "llama3-70b"],
        name: "Llama-3.1-70B",
        layers: 80,
        hidden: 8192,
        heads: 64,
        kv_heads: 8,
        intermediate: 28672,
        vocab: 128256,
        moe: None,
        max_context: 131072,
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

    /// Looks a shipped model up by name, case-insensitively; Hugging Face ids
    /// work too (`meta-llama/Llama-3.1-8B-Instruct`), and Llama 3 and 3.3 map
    /// to the Llama 3.1 architecture of the same size.
    pub fn lookup(name: &str) -> Result<ModelSpec, Error> {
        let base = name.rsplit('/').next().unwrap_or(name);
        let mut key = normalise(base);
        if let Some(rest) = key.strip_prefix("meta-") {
            key = rest.to_string();
        }
        while let Some(stripped) = VARIANT_SUFFIXES.iter().find_map(|s| key.strip_suffix(s)) {
            key = stripped.to_string();
        }
        MODELS.iter().find(|m| m.aliases.contains(&key.as_str())).map(ModelSpec::from_entry).ok_or_else(|| {
            Error::UnknownModel {
                name: name.to_string(),
                known: MODELS.iter().map(|m| m.aliases[0]).collect::<Vec<_>>().join(", "),
            }
        })
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
            head_dim: 128,
            intermediate_size: e.intermediate,
            vocab_size: e.vocab,
            tie_word_embeddings: false,
            moe: e.moe,
            max_context: e.max_context,
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
    /// Llama, Qwen2 and Mistral configs default it), `num_local_experts` or
    /// `num_experts` with `num_experts_per_tok`, and `max_position_embeddings`.
    /// Multimodal configs are read from their `text_config`. Shared experts
    /// and biases are not counted: they are a fraction of a percent.
    pub fn from_hf_config_str(text: &str, fallback_name: &str) -> Result<ModelSpec, Error> {
        const MAX_PARAMS: f64 = 1e15;
        let invalid = |message: String| Error::ModelConfigInvalid { source_name: fallback_name.to_string(), message };
        let root: serde_json::Value = serde_json::from_str(text).map_err(|e| invalid(format!("not JSON: {e}")))?;
        let mut cfg = root.as_object().ok_or_else(|| invalid("the top level is not a JSON object".into()))?;
        if cfg.get("num_hidden_layers").is_none() {
            if let Some(inner) = cfg.get("text_config").and_then(|v| v.as_object()) {
                cfg = inner;
            }
        }
        let get = |key: &str| -> Result<Option<u32>, Error> {
            match cfg.get(key) {
                None | Some(serde_json::Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n > 0 && n <= u32::MAX as u64)
                    .map(|n| Some(n as u32))
                    .ok_or_else(|| invalid(format!("`{key}` must be a positive integer, got {v}"))),
            }
        };
        let need =
            |key: &str| -> Result<u32, Error> { get(key)?.ok_or_else(|| invalid(format!("`{key}` is missing"))) };

        let num_layers = need("num_hidden_layers")?;
        let hidden_size = need("hidden_size")?;
        let num_heads = need("num_attention_heads")?;
        let num_kv_heads = get("num_key_value_heads")?.unwrap_or(num_heads);
        let head_dim = match get("head_dim")? {
            Some(h) => h,
            None if hidden_size % num_heads == 0 => hidden_size / num_heads,
            None => {
                return Err(invalid(format!(
                    "`head_dim` is missing and hidden_size {hidden_size} is not a multiple of \
                     num_attention_heads {num_heads}"
                )))
            }
        };
        if num_heads % num_kv_heads != 0 {
            return Err(invalid(format!(
                "num_attention_heads {num_heads} is not a multiple of num_key_value_heads {num_kv_heads}"
            )));
        }
        let experts = match get("num_local_experts")? {
            Some(n) => Some(n),
            None => get("num_experts")?,
        };
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
        let intermediate_size = match (moe, get("moe_intermediate_size")?) {
            (Some(_), Some(m)) => m,
            _ => need("intermediate_size")?,
        };
        let tie_word_embeddings = match cfg.get("tie_word_embeddings") {
            None | Some(serde_json::Value::Null) => false,
            Some(v) => {
                v.as_bool().ok_or_else(|| invalid(format!("`tie_word_embeddings` must be true or false, got {v}")))?
            }
        };
        // Sizes whose product passes any model's (a hidden_size of 2^31 had
        // wrapped the parameter count, and the model "fit" on one GPU).
        let vocab_size = need("vocab_size")?;
        let f = f64::from;
        let (q, kv) = (f(num_heads) * f(head_dim), f(num_kv_heads) * f(head_dim));
        let experts = moe.map_or(1.0, |m| f(m.num_experts));
        let layer = 2.0 * f(hidden_size) * (q + kv) + experts * f(hidden_size) * (3.0 * f(intermediate_size) + 1.0);
        let params = f(num_layers) * layer + 2.0 * f(vocab_size) * f(hidden_size);
        if params > MAX_PARAMS {
            return Err(invalid(format!(
                "its sizes make a model of {params:.1e} parameters, past any model (at most {MAX_PARAMS:e}): check \
                 hidden_size, intermediate_size, the head counts, num_hidden_layers and vocab_size"
            )));
        }
        let name = root
            .get("_name_or_path")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
            .unwrap_or(fallback_name)
            .to_string();
        Ok(ModelSpec {
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
            max_context: get("max_position_embeddings")?.unwrap_or(131072),
        })
    }

    /// q, k, v and o projections of one layer.
    pub fn attention_params_per_layer(&self) -> u64 {
        let d = self.hidden_size as u64;
        let q = self.num_heads as u64 * self.head_dim as u64;
        let kv = self.num_kv_heads as u64 * self.head_dim as u64;
        d * q + 2 * d * kv + q * d
    }

    /// One gated MLP (gate, up and down projections): one expert for MoE.
    pub fn mlp_params_per_expert(&self) -> u64 {
        3 * self.hidden_size as u64 * self.intermediate_size as u64
    }

    /// Every MLP parameter of one layer, all experts and the router included.
    pub fn mlp_params_per_layer(&self) -> u64 {
        match self.moe {
            None => self.mlp_params_per_expert(),
            Some(m) => {
                m.num_experts as u64 * self.mlp_params_per_expert() + self.hidden_size as u64 * m.num_experts as u64
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
        self.num_layers as u64 * (self.attention_params_per_layer() + self.mlp_params_per_layer())
    }

    /// Non-embedding parameters one token passes through (`P` of docs/simulator.md):
    /// for MoE only the top-k experts and the router.
    pub fn active_params(&self) -> u64 {
        let mlp = match self.moe {
            None => self.mlp_params_per_expert(),
            Some(m) => {
                m.experts_per_token as u64 * self.mlp_params_per_expert()
                    + self.hidden_size as u64 * m.num_experts as u64
            }
        };
        self.num_layers as u64 * (self.attention_params_per_layer() + mlp)
    }

    pub fn total_params(&self) -> u64 {
        self.body_params() + self.embedding_params()
    }

    /// Weight bytes `W` on all GPUs together: body at the precision's width,
    /// embeddings and LM head at 16 bits.
    pub fn weight_bytes(&self, precision: Precision) -> f64 {
        self.body_params() as f64 * precision.bytes_per_weight() + self.embedding_params() as f64 * 2.0
    }

    /// KV-cache bytes per token on one GPU: 2·L·H_kv·h_d·b_kv split over TP.
    /// Past TP = H_kv each GPU keeps a replica of its head, as vLLM does.
    pub fn kv_bytes_per_token_per_gpu(&self, kv: KvCacheDtype, tp: u32) -> f64 {
        let heads_per_gpu = self.num_kv_heads.div_ceil(tp.max(1));
        2.0 * self.num_layers as f64 * heads_per_gpu as f64 * self.head_dim as f64 * kv.bytes_per_element()
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
