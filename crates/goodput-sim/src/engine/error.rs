//! The one error type of the engine model. Every message names the problem and
//! the fix, because these errors reach users of `serve` and `estimate` as is.

use std::path::PathBuf;

/// What can go wrong when building or driving the simulated engine.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error("unknown GPU `{name}`; known GPUs: {known}")]
    UnknownGpu { name: String, known: String },

    #[error(
        "unknown model `{name}`; known models: {known}; for any other model pass the path \
         to its Hugging Face config.json"
    )]
    UnknownModel { name: String, known: String },

    #[error("unknown precision `{0}`; use one of bf16, fp8, int8, int4, fp4 (NVFP4), mxfp4 (GPT-OSS's experts)")]
    UnknownPrecision(String),

    #[error("unknown KV-cache dtype `{0}`; use auto (same as the activations, 16-bit) or fp8")]
    UnknownKvCacheDtype(String),

    #[error("{gpu} has no {cores} cores, so --precision {precision} cannot run on it; {fix}")]
    /// `precision` as `--precision` names it (the error stays beneath the
    /// catalog, which returns it); `cores` the format it needs and its
    /// units' name (`FP4 tensor`, AMD's `FP4 matrix`), `fix` the GPUs that have it and the precisions this one runs.
    PrecisionUnsupported { gpu: String, precision: String, cores: String, fix: String },

    #[error("cannot read model config {}: {message}", path.display())]
    ModelConfigRead { path: PathBuf, message: String },

    #[error("model config {source_name} is not usable: {message}")]
    ModelConfigInvalid { source_name: String, message: String },

    #[error(
        "{model} in {precision} does not fit on {gpu} with tensor parallelism {tp}: the weights \
         take {weights_gib:.1} GiB per GPU, but {gpu_memory_utilization} of its memory minus \
         activations and runtime leaves {}; {suggestion}",
        if *budget_gib > 0.0 {
            format!("only {budget_gib:.1} GiB")
        } else {
            format!("none (it is {:.1} GiB short before the weights)", -budget_gib)
        }
    )]
    ModelDoesNotFit {
        model: String,
        gpu: String,
        precision: String,
        tp: u32,
        gpu_memory_utilization: f64,
        weights_gib: f64,
        budget_gib: f64,
        suggestion: String,
    },

    /// The weights fit but one block of the KV cache does not: what is left
    /// after the weights, activations and runtime is less than a block.
    #[error(
        "{model} on {gpu} with tensor parallelism {tp}: the weights fit ({weights_gib:.1} GiB per \
         GPU), but one KV-cache block of {block_size} tokens takes {} per GPU, more than the {} the memory \
         leaves after the weights, activations and runtime; {suggestion}",
        bytes_text(*block_bytes),
        bytes_text(*left_bytes)
    )]
    KvBlockDoesNotFit {
        model: String,
        gpu: String,
        tp: u32,
        block_size: u32,
        weights_gib: f64,
        block_bytes: f64,
        left_bytes: f64,
        suggestion: String,
    },

    #[error("invalid engine setting: {0}")]
    InvalidConfig(String),

    #[error("invalid calibration: {0}")]
    InvalidCalibration(String),

    #[error("request {id} rejected: {message}")]
    InvalidRequest { id: u64, message: String },

    #[error("request id {0} is already in the engine; ids must be unique among live requests")]
    DuplicateRequest(u64),

    #[error("invalid virtual load: {0}")]
    InvalidLoad(String),

    #[error("validation CSV, line {line}: {message}")]
    Csv { line: usize, message: String },

    #[error("step-time table, line {line}: {message}")]
    StepTable { line: usize, message: String },
}

/// Bytes as GiB, or MiB or KiB below one of the larger unit.
fn bytes_text(bytes: f64) -> String {
    const KIB: f64 = 1024.0;
    if bytes >= KIB * KIB * KIB {
        format!("{:.1} GiB", bytes / (KIB * KIB * KIB))
    } else if bytes >= KIB * KIB {
        format!("{:.1} MiB", bytes / (KIB * KIB))
    } else {
        format!("{:.1} KiB", bytes / KIB)
    }
}
