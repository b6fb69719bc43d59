//! The simulated inference engine of DESIGN §7: a pure, synchronous model of
//! a vLLM-V1-like server (catalog, roofline step times, paged KV cache with
//! prefix caching, continuous-batching scheduler), its virtual-time driver,
//! and the check of its predictions against published measurements.

mod catalog;
mod config;
mod error;
mod kv;
mod roofline;
mod scheduler;

pub use catalog::{GpuFamily, GpuSpec, KvCacheDtype, ModelSpec, Moe, Precision};
pub use config::{
    EngineConfig, DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION,
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
};
pub use error::Error;
pub use kv::Prompt;
pub use roofline::{kv_capacity, BatchShape, Calibration, KvCapacity, Roofline, StepBreakdown};
pub use scheduler::{BatchSummary, Engine, EngineStats, StepOutcome, TokenEvent};
