//! The hardware and model catalog: GPU datasheet numbers, model architectures
//! (shipped or read from a Hugging Face `config.json`), weight precisions and
//! the parameter and byte counts the roofline model is built from.
//!
//! Data and code by subject: `gpus` (the GPU table and lookup), `models`
//! (the model table, `config.json` reading and the counts), `precision`
//! (weight and KV-cache dtypes), `names` (how names are compared).

mod gpus;
mod models;
mod names;
mod precision;

pub use gpus::{GpuFamily, GpuSpec};
pub use models::{KvBlocks, Mla, ModelSpec, Moe, SlidingWindow};
pub(crate) use precision::GIB;
pub use precision::{KvCacheDtype, Precision, FP16_NAMES};

#[cfg(test)]
mod tests;
