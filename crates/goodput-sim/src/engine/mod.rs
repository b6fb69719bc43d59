//! The simulated inference engine of docs/simulator.md: a pure, synchronous model of
//! a vLLM-V1-like server (catalog, roofline step times, paged KV cache with
//! prefix caching, continuous-batching scheduler), its virtual-time driver,
//! and the check of its predictions against published measurements.
//!
//! A real-time driver (the HTTP front) owns an [`Engine`] and loops: call
//! [`Engine::step`]; when it returns `None`, wait for a request; otherwise
//! sleep the step's `duration`, then deliver its tokens. Requests added or
//! aborted during the sleep take effect at the next step, as they would in
//! a real engine whose step is already on the GPU.

pub mod accuracy;
mod calibration;
mod catalog;
mod config;
pub mod disagg;
mod error;
pub mod fit;
mod kv;
mod roofline;
mod router;
mod scheduler;
pub mod step_table;
pub mod validate;
mod virtual_time;

pub(crate) use calibration::serial_start;
pub use calibration::Calibration;
pub use catalog::{GpuFamily, GpuSpec, KvCacheDtype, Mla, ModelSpec, Moe, Precision, SlidingWindow, FP16_NAMES};
pub use config::{
    vllm_default_budget, vllm_large_gpu, EngineConfig, Mxfp4Activations, SpecDecoding, DEFAULT_BLOCK_SIZE,
    DEFAULT_GPU_MEMORY_UTILIZATION, DEFAULT_MAX_NUM_BATCHED_TOKENS, MAX_BATCH_WAIT_TIMEOUT_ITERS, MAX_DP,
    MAX_SCHEDULER_RECV_INTERVAL, MAX_SCHEDULE_CONSERVATIVENESS, MAX_SPEC_TOKENS, SMALL_GPU_MAX_NUM_BATCHED_TOKENS,
};
pub use disagg::{Disaggregation, KvLink};
pub use error::Error;
pub use kv::Prompt;
pub use roofline::{kv_capacity, Attended, BatchShape, KvCapacity, Roofline, StepBreakdown, StepPower};
pub use router::{Router, RouterPolicy};
pub use scheduler::{
    sglang_default_chunk, sglang_default_max_running, BatchSummary, Controller, Engine, EngineStats, Load, LoadBalance,
    Published, ReplicaBalancer, SchedulerPolicy, StepOutcome, TokenEvent, SGLANG_MAX_PREFILL_TOKENS,
    TRTLLM_MAX_BATCH_SIZE,
};
pub use virtual_time::{
    simulate, simulate_until, EngineSample, EngineView, PrefixBlocks, PromptKind, ReplicaView, SharedPrefix, SimRun,
    VirtualLoad, VirtualRequest, VirtualTurn,
};
