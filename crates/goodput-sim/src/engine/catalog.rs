//! The hardware and model catalog: GPU datasheet numbers, model architectures
//! (shipped or read from a Hugging Face `config.json`), weight precisions and
//! the parameter and byte counts the roofline model is built from.

use super::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// GPU generations; calibration constants are kept per family because kernels
/// and runtimes behave alike within one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpuFamily {
    Ampere,
    Ada,
    Hopper,
    Blackwell,
    Cdna3,
}

impl GpuFamily {
    pub const ALL: [GpuFamily; 5] =
        [GpuFamily::Ampere, GpuFamily::Ada, GpuFamily::Hopper, GpuFamily::Blackwell, GpuFamily::Cdna3];

    pub fn as_str(self) -> &'static str {
        match self {
            GpuFamily::Ampere => "ampere",
            GpuFamily::Ada => "ada",
            GpuFamily::Hopper => "hopper",
            GpuFamily::Blackwell => "blackwell",
            GpuFamily::Cdna3 => "cdna3",
        }
    }
}

impl fmt::Display for GpuFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One GPU's datasheet numbers. Peaks are dense (no sparsity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuSpec {
    pub name: String,
    pub family: GpuFamily,
    /// The datasheet size, read as GiB: the drivers report within about 1 % of
    /// that (an "80 GB" H100 shows 79.6 GiB), closer than decimal GB would be.
    pub memory_gib: f64,
    pub bandwidth_tb_s: f64,
    pub bf16_tflops: f64,
    /// `None` where the tensor cores have no FP8 (A100).
    pub fp8_tflops: Option<f64>,
    /// GPU-to-GPU bandwidth per direction, for tensor-parallel all-reduce:
    /// NVLink or Infinity Fabric where the part has it, else PCIe.
    pub interconnect_gb_s: f64,
}

struct GpuEntry {
    aliases: &'static [&'static str],
    name: &'static str,
    family: GpuFamily,
    memory_gib: f64,
    bandwidth_tb_s: f64,
    bf16_tflops: f64,
    fp8_tflops: Option<f64>,
    interconnect_gb_s: f64,
}

const GPUS: [GpuEntry; 8] = [
    GpuEntry {
        aliases: &["h100-sxm", "h100", "h100-sxm5", "h100-80gb", "h100-sxm-80gb"],
        name: "H100 SXM",
        family: GpuFamily::Hopper,
        memory_gib: 80.0,
        bandwidth_tb_s: 3.35,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        interconnect_gb_s: 450.0,
    },
    GpuEntry {
        aliases: &["h100-pcie", "h100-pcie-80gb"],
        name: "H100 PCIe",
        family: GpuFamily::Hopper,
        memory_gib: 80.0,
        bandwidth_tb_s: 2.0,
        bf16_tflops: 756.0,
        fp8_tflops: Some(1513.0),
        interconnect_gb_s: 64.0,
    },
    GpuEntry {
        aliases: &["h200", "h200-sxm", "h200-141gb"],
        name: "H200",
        family: GpuFamily::Hopper,
        memory_gib: 141.0,
        bandwidth_tb_s: 4.8,
        bf16_tflops: 989.0,
        fp8_tflops: Some(1979.0),
        interconnect_gb_s: 450.0,
    },
    GpuEntry {
        aliases: &["a100-80gb", "a100", "a100-sxm", "a100-sxm4-80gb"],
        name: "A100 80GB",
        family: GpuFamily::Ampere,
        memory_gib: 80.0,
        bandwidth_tb_s: 2.039,
        bf16_tflops: 312.0,
        fp8_tflops: None,
        interconnect_gb_s: 300.0,
    },
    GpuEntry {
        aliases: &["l40s"],
        name: "L40S",
        family: GpuFamily::Ada,
        memory_gib: 48.0,
        bandwidth_tb_s: 0.864,
        bf16_tflops: 362.0,
        fp8_tflops: Some(733.0),
        interconnect_gb_s: 32.0,
    },
    GpuEntry {
        aliases: &["l4"],
        name: "L4",
        family: GpuFamily::Ada,
        memory_gib: 24.0,
        bandwidth_tb_s: 0.3,
        bf16_tflops: 121.0,
        fp8_tflops: Some(242.5),
        interconnect_gb_s: 32.0,
    },
    GpuEntry {
        aliases: &["b200"],
        name: "B200",
        family: GpuFamily::Blackwell,
        memory_gib: 180.0,
        bandwidth_tb_s: 8.0,
        bf16_tflops: 2250.0,
        fp8_tflops: Some(4500.0),
        interconnect_gb_s: 900.0,
    },
    GpuEntry {
        aliases: &["mi300x"],
        name: "MI300X",
        family: GpuFamily::Cdna3,
        memory_gib: 192.0,
        bandwidth_tb_s: 5.3,
        bf16_tflops: 1307.0,
        fp8_tflops: Some(2615.0),
        interconnect_gb_s: 448.0,
    },
];

impl GpuSpec {
    /// Looks a GPU up by name, case-insensitively (`h100`, `H100-SXM`,
    /// `nvidia-h200`, `a100-80gb`, `mi300x`, …).
    pub fn lookup(name: &str) -> Result<GpuSpec, Error> {
        let mut key = normalise(name);
        for vendor in ["nvidia-", "amd-", "instinct-"] {
            if let Some(rest) = key.strip_prefix(vendor) {
                key = rest.to_string();
            }
        }
        GPUS.iter().find(|g| g.aliases.contains(&key.as_str())).map(GpuSpec::from_entry).ok_or_else(|| {
            Error::UnknownGpu {
                name: name.to_string(),
                known: GPUS.iter().map(|g| g.aliases[0]).collect::<Vec<_>>().join(", "),
            }
        })
    }

    /// Every GPU the catalog ships, in datasheet order.
    pub fn catalog() -> Vec<GpuSpec> {
        GPUS.iter().map(GpuSpec::from_entry).collect()
    }

    fn from_entry(e: &GpuEntry) -> GpuSpec {
        GpuSpec {
            name: e.name.to_string(),
            family: e.family,
            memory_gib: e.memory_gib,
            bandwidth_tb_s: e.bandwidth_tb_s,
            bf16_tflops: e.bf16_tflops,
            fp8_tflops: e.fp8_tflops,
            interconnect_gb_s: e.interconnect_gb_s,
        }
    }

    pub fn memory_bytes(&self) -> f64 {
        self.memory_gib * GIB
    }

    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        self.bandwidth_tb_s * 1e12
    }

    pub fn interconnect_bytes_per_s(&self) -> f64 {
        self.interconnect_gb_s * 1e9
    }

    /// The tensor-core peak a precision runs its matrix products at, in
    /// FLOP/s. Weight-only formats (INT8, INT4) dequantise to 16-bit, so they
    /// run at the BF16 peak.
    pub fn peak_flops(&self, precision: Precision) -> Result<f64, Error> {
        let tflops = match precision {
            Precision::Fp8 => {
                self.fp8_tflops.ok_or_else(|| Error::PrecisionUnsupported { gpu: self.name.clone(), precision })?
            }
            Precision::Bf16 | Precision::Int8 | Precision::Int4 => self.bf16_tflops,
        };
        Ok(tflops * 1e12)
    }
}

pub(crate) const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// How the body's weights are stored. Embeddings and the LM head stay 16-bit
/// whatever the body uses, as quantised checkpoints ship them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    Bf16,
    Fp8,
    /// Weight-only INT8 (W8A16).
    Int8,
    /// Weight-only INT4 with group size 128 (AWQ/GPTQ-like).
    Int4,
}

impl Precision {
    pub const ALL: [Precision; 4] = [Precision::Bf16, Precision::Fp8, Precision::Int8, Precision::Int4];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
        }
    }

    /// Bytes per body weight. INT4 carries a 16-bit scale and zero point per
    /// group of 128 weights: 0.5 × (1 + 2/64).
    pub fn bytes_per_weight(self) -> f64 {
        match self {
            Precision::Bf16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 => 0.5 * (1.0 + 2.0 / 64.0),
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = Error;

    /// FP16 is accepted as BF16: same bytes, same tensor-core peak.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bf16" | "bfloat16" | "fp16" | "float16" | "half" => Ok(Precision::Bf16),
            "fp8" | "float8" | "fp8-e4m3" => Ok(Precision::Fp8),
            "int8" | "w8a16" => Ok(Precision::Int8),
            "int4" | "w4a16" | "awq" | "gptq" => Ok(Precision::Int4),
            _ => Err(Error::UnknownPrecision(s.to_string())),
        }
    }
}

/// How KV-cache elements are stored. `Auto` follows vLLM: the activation
/// dtype (16-bit) even when the weights are FP8.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KvCacheDtype {
    #[default]
    Auto,
    Fp8,
}

impl KvCacheDtype {
    pub fn bytes_per_element(self) -> f64 {
        match self {
            KvCacheDtype::Auto => 2.0,
            KvCacheDtype::Fp8 => 1.0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KvCacheDtype::Auto => "auto",
            KvCacheDtype::Fp8 => "fp8",
        }
    }
}

impl fmt::Display for KvCacheDtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for KvCacheDtype {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "bf16" | "fp16" => Ok(KvCacheDtype::Auto),
            "fp8" | "fp8_e4m3" | "fp8-e4m3" | "fp8_e5m2" => Ok(KvCacheDtype::Fp8),
            _ => Err(Error::UnknownKvCacheDtype(s.to_string())),
        }
    }
}

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

const MODELS: [ModelEntry; 6] = [
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
        let text = std::fs::read_to_string(path)
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
            vocab_size: need("vocab_size")?,
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

fn normalise(name: &str) -> String {
    name.trim().to_ascii_lowercase().chars().map(|c| if c == '_' || c == ' ' { '-' } else { c }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameter_counts_match_the_published_sizes() {
        // (model, total params as published, active params incl. embeddings)
        let cases = [
            ("llama-3.1-8b", 8.03e9, 8.03e9),
            ("llama-3.1-70b", 70.55e9, 70.55e9),
            ("llama-3.1-405b", 405.85e9, 405.85e9),
            ("qwen2.5-7b", 7.62e9, 7.62e9),
            ("qwen2.5-72b", 72.7e9, 72.7e9),
            ("mixtral-8x7b", 46.70e9, 12.88e9),
        ];
        for (name, total, active) in cases {
            let m = ModelSpec::lookup(name).unwrap();
            let t = m.total_params() as f64;
            let a = (m.active_params() + m.embedding_params()) as f64;
            assert!((t / total - 1.0).abs() < 0.01, "{name}: total {t:e} vs {total:e}");
            assert!((a / active - 1.0).abs() < 0.01, "{name}: active {a:e} vs {active:e}");
        }
        // Exact for the 8B, counted by hand: 32 × (41,943,040 + 176,160,768)
        // + 2 × 128,256 × 4,096.
        let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
        assert_eq!(m.body_params(), 6_979_321_856);
        assert_eq!(m.total_params(), 8_029_995_008);
    }

    #[test]
    fn model_aliases_resolve_case_insensitively() {
        for (alias, name) in [
            ("llama-3.1-8b", "Llama-3.1-8B"),
            ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
            ("meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B"),
            ("LLAMA-3.3-70B", "Llama-3.1-70B"),
            ("llama-3-70b", "Llama-3.1-70B"),
            ("meta-llama/Llama-3.3-70B-Instruct", "Llama-3.1-70B"),
            ("nvidia/Llama-3.1-8B-Instruct-FP8", "Llama-3.1-8B"),
            ("Qwen/Qwen2.5-72B-Instruct", "Qwen2.5-72B"),
            ("mistralai/Mixtral-8x7B-Instruct-v0.1", "Mixtral-8x7B"),
        ] {
            assert_eq!(ModelSpec::lookup(alias).unwrap().name, name, "{alias}");
        }
        let err = ModelSpec::lookup("gpt-5").unwrap_err().to_string();
        assert!(err.contains("llama-3.1-8b") && err.contains("config.json"), "{err}");
    }

    #[test]
    fn gpu_aliases_and_datasheets() {
        for (alias, name) in [
            ("h100", "H100 SXM"),
            ("H100-SXM", "H100 SXM"),
            ("h100-pcie", "H100 PCIe"),
            ("h200", "H200"),
            ("a100", "A100 80GB"),
            ("a100-80gb", "A100 80GB"),
            ("l40s", "L40S"),
            ("l4", "L4"),
            ("b200", "B200"),
            ("MI300X", "MI300X"),
            ("nvidia_h100_sxm", "H100 SXM"),
        ] {
            assert_eq!(GpuSpec::lookup(alias).unwrap().name, name, "{alias}");
        }
        let h100 = GpuSpec::lookup("h100").unwrap();
        assert_eq!((h100.memory_gib, h100.bandwidth_tb_s), (80.0, 3.35));
        assert_eq!((h100.bf16_tflops, h100.fp8_tflops), (989.0, Some(1979.0)));
        let err = GpuSpec::lookup("tpu-v5").unwrap_err().to_string();
        assert!(err.contains("h100-sxm") && err.contains("mi300x"), "{err}");
    }

    #[test]
    fn fp8_on_a100_is_an_error_that_names_the_fix() {
        let a100 = GpuSpec::lookup("a100").unwrap();
        let err = a100.peak_flops(Precision::Fp8).unwrap_err();
        assert!(matches!(err, Error::PrecisionUnsupported { .. }));
        assert!(err.to_string().contains("bf16"), "{err}");
        assert_eq!(a100.peak_flops(Precision::Int4).unwrap(), 312e12);
    }

    #[test]
    fn precision_bytes_and_parsing() {
        assert_eq!(Precision::Int4.bytes_per_weight(), 0.515625);
        assert_eq!("BF16".parse::<Precision>().unwrap(), Precision::Bf16);
        assert_eq!("fp16".parse::<Precision>().unwrap(), Precision::Bf16);
        assert!("fp4".parse::<Precision>().is_err());
        // INT4 body, 16-bit embeddings: 6.98e9 × 0.515625 + 1.05e9 × 2 bytes.
        let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
        let w = m.weight_bytes(Precision::Int4);
        assert_eq!(w, 6_979_321_856.0 * 0.515625 + 1_050_673_152.0 * 2.0);
    }

    #[test]
    fn hf_config_reads_dense_and_moe_models() {
        let qwen = r#"{"_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "hidden_size": 3584,
            "intermediate_size": 18944, "num_attention_heads": 28, "num_hidden_layers": 28,
            "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": false,
            "max_position_embeddings": 32768}"#;
        let m = ModelSpec::from_hf_config_str(qwen, "x").unwrap();
        let shipped = ModelSpec::lookup("qwen2.5-7b").unwrap();
        assert_eq!(m.total_params(), shipped.total_params());
        assert_eq!(m.head_dim, 128);
        assert_eq!(m.name, "Qwen/Qwen2.5-7B-Instruct");

        let mixtral = r#"{"hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
            "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2,
            "head_dim": null}"#;
        let m = ModelSpec::from_hf_config_str(mixtral, "mixtral").unwrap();
        assert_eq!(m.moe, ModelSpec::lookup("mixtral-8x7b").unwrap().moe);
        assert_eq!(m.active_params(), ModelSpec::lookup("mixtral-8x7b").unwrap().active_params());

        let tied = r#"{"hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
            "num_hidden_layers": 16, "num_key_value_heads": 8, "vocab_size": 128256,
            "tie_word_embeddings": true, "head_dim": 64}"#;
        let m = ModelSpec::from_hf_config_str(tied, "llama-1b").unwrap();
        assert_eq!(m.embedding_params(), 128256 * 2048);
        assert_eq!(m.head_dim, 64);
    }

    #[test]
    fn hf_config_errors_name_the_field() {
        let err = ModelSpec::from_hf_config_str(r#"{"hidden_size": 4096}"#, "m").unwrap_err();
        assert!(err.to_string().contains("num_hidden_layers"), "{err}");
        let err = ModelSpec::from_hf_config_str("[1]", "m").unwrap_err();
        assert!(err.to_string().contains("object"), "{err}");
        let err = ModelSpec::from_hf_config(Path::new("/nonexistent/config.json")).unwrap_err();
        assert!(matches!(err, Error::ModelConfigRead { .. }));

        let dir = std::env::temp_dir().join(format!("goodput-sim-hf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("config.json");
        std::fs::write(&path, r#"{"num_hidden_layers": 2, "hidden_size": -1}"#).unwrap();
        let err = ModelSpec::from_hf_config(&path).unwrap_err().to_string();
        std::fs::remove_dir_all(&dir).ok();
        assert!(err.contains("hidden_size") && err.contains("config.json"), "{err}");
    }

    #[test]
    fn kv_bytes_per_token() {
        let m = ModelSpec::lookup("llama-3.1-8b").unwrap();
        // 2 × 32 layers × 8 heads × 128 × 2 bytes = 128 KiB.
        assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 1), 131072.0);
        assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Fp8, 2), 32768.0);
        // Past TP = 8 KV heads each GPU holds a replica of one head.
        assert_eq!(m.kv_bytes_per_token_per_gpu(KvCacheDtype::Auto, 16), 16384.0);
    }
}
