//! goodput-core: the pure heart of goodput. Request records, the metric
//! formulas of docs/metrics.md, exact statistics, the server's scraped
//! signals and the diagnoses drawn from them, and the result document. No
//! network, no async: every number in a report is a function of the records
//! and scrapes, defined here. The one I/O is [`input`], the bounded reading
//! of the files a command is given, shared by every reader so that each has
//! the same bounds and says the same things.

pub mod assemble;
pub mod chunks;
pub mod civil;
pub mod config;
pub mod cost;
pub mod engine;
pub mod hash;
pub mod input;
pub mod live;
pub mod metrics;
pub mod models;
pub mod quality;
pub mod ratings;
pub mod record;
pub mod redact;
pub mod result;
pub mod scoring;
pub mod scrape;
mod serde_ns;
pub mod session;
pub mod shard;
pub mod slice;
pub mod slo;
pub mod stability;
pub mod stats;
pub mod summary;
pub mod sweep;
pub mod window;

pub use config::{RunConfig, SweepConfig};
pub use metrics::RequestMetrics;
pub use record::{
    apportion, chunk_counts, spread_evenly, tokenizer_fits, Channel, ChunkTokenSource, Chunks, CountSource,
    FailureKind, Outcome, OutputChunk, RequestRecord, SessionTurn, TokenCounts,
};
pub use result::{ClientCost, Compat, Diagnosis, DiagnosisKind, RunResult, Target, Tool, Window, SCHEMA};
pub use slice::TimeSlice;
pub use slo::{Slo, SloError, SloReport};
pub use stats::{percentile, Distribution, Repeated};
pub use summary::{analyze, Analysis, AnalysisOptions, Summary, VllmCompat};

/// Default percentiles reported for every latency metric.
pub const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];
