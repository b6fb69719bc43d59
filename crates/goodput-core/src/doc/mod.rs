//! The result document (docs/result.md) and its parts: what a run or a
//! sweep writes and what `report`, `compare` and `merge` read back. Types
//! with their serde and schema derives; the analysis that fills them is in
//! [`crate::analysis`].

pub mod chunks;
pub mod config;
pub mod engine;
pub mod frontier;
pub mod overlay;
pub mod record;
pub mod repeats;
pub mod result;
pub mod shard;
pub mod sweep;
pub mod window;
