//! Weight and KV-cache precisions, and their bytes per element.

use crate::engine::error::Error;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

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
    /// NVFP4: 4-bit (E2M1) weights and activations with an FP8 scale per
    /// block of 16, run on FP4 tensor cores (Blackwell only).
    Fp4,
    /// MXFP4 as GPT-OSS ships it: the routed experts' weights 4-bit (E2M1)
    /// with an 8-bit power-of-two scale per block of 32, everything else
    /// (attention, router, embeddings) 16-bit; a model without experts
    /// takes it over its whole body. The experts' products run as
    /// TensorRT-LLM's and vLLM's kernels run them: against FP8 activations
    /// on GPUs with FP4 tensor cores (W4A8), against 16-bit ones elsewhere
    /// (W4A16, Hopper's Triton and Marlin kernels).
    Mxfp4,
}

impl Precision {
    /// Widest first; FP4 last, so that a suggestion of a narrower format
    /// offers the weight-only INT4 that runs everywhere before it.
    pub const ALL: [Precision; 6] =
        [Precision::Bf16, Precision::Fp8, Precision::Int8, Precision::Int4, Precision::Fp4, Precision::Mxfp4];

    pub fn as_str(self) -> &'static str {
        match self {
            Precision::Bf16 => "bf16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
            Precision::Fp4 => "fp4",
            Precision::Mxfp4 => "mxfp4",
        }
    }

    /// Bytes per body weight. INT4 carries a 16-bit scale and zero point per
    /// group of 128 weights: 0.5 × (1 + 2/64). NVFP4 carries one FP8 scale
    /// per block of 16 (and one FP32 scale per tensor, negligible):
    /// 0.5 + 1/16. MXFP4 one 8-bit scale per block of 32: 0.5 + 1/32 (its
    /// 16-bit parts: [`crate::engine::ModelSpec::weight_bytes`]).
    pub fn bytes_per_weight(self) -> f64 {
        match self {
            Precision::Bf16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 => 0.5 * (1.0 + 2.0 / 64.0),
            Precision::Fp4 => 0.5 + 1.0 / 16.0,
            Precision::Mxfp4 => 0.5 + 1.0 / 32.0,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The names of FP16, which is planned and estimated as BF16 (the same
/// two bytes a weight, the same tensor-core peak on every catalog GPU).
pub const FP16_NAMES: [&str; 3] = ["fp16", "float16", "half"];

impl FromStr for Precision {
    type Err = Error;

    /// FP16 is accepted as BF16: same bytes, same tensor-core peak.
    fn from_str(s: &str) -> Result<Self, Error> {
        match s.trim().to_ascii_lowercase().as_str() {
            "bf16" | "bfloat16" => Ok(Precision::Bf16),
            name if FP16_NAMES.contains(&name) => Ok(Precision::Bf16),
            "fp8" | "float8" | "fp8-e4m3" => Ok(Precision::Fp8),
            "int8" | "w8a16" => Ok(Precision::Int8),
            "int4" | "w4a16" | "awq" | "gptq" => Ok(Precision::Int4),
            "fp4" | "nvfp4" | "float4" | "fp4-e2m1" => Ok(Precision::Fp4),
            "mxfp4" | "mx-fp4" | "w4a8-mxfp4" => Ok(Precision::Mxfp4),
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
