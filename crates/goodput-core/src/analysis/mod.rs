//! What a run's records say: the per-request metrics of docs/metrics.md,
//! exact statistics, the run-level summary, SLOs and goodput, stability,
//! user-felt ratings, cost, energy, per-model and per-session views, time slices,
//! and the assembling of a result document from records.

pub mod assemble;
pub mod cost;
pub mod energy;
pub mod interval;
pub mod metrics;
pub mod models;
pub mod ratings;
pub mod session;
pub mod slice;
pub mod slo;
pub mod stability;
pub mod stats;
pub mod summary;
pub mod until;
