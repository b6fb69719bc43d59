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
pub mod dispatch;
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

/// The furthest ahead goodput plans a time: a run's length, a wait, the gap
/// between two sends, a start. A hundred years is longer than any run, and
/// far enough within what `Duration` and `Instant` hold that a start plus
/// any of these never overflows (`--rate 1e-300`, one send every 1e300 s,
/// once panicked there).
pub const HORIZON: std::time::Duration = std::time::Duration::from_secs(100 * 365 * 24 * 3600);

/// Seconds read from a file (a window, a start, another tool's stamps) as
/// a duration: what no duration can hold is clamped into one (below zero
/// or not a number to zero, too large to the largest), never a panic.
pub fn clamped_secs(x: f64) -> std::time::Duration {
    std::time::Duration::try_from_secs_f64(x.max(0.0)).unwrap_or(if x > 0.0 {
        std::time::Duration::MAX
    } else {
        std::time::Duration::ZERO
    })
}

/// Default percentiles reported for every latency metric.
pub const DEFAULT_PERCENTILES: [f64; 4] = [50.0, 90.0, 95.0, 99.0];

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn seconds_no_duration_holds_are_clamped_not_a_panic() {
        assert_eq!(super::clamped_secs(1.5), Duration::from_millis(1500));
        assert_eq!(super::clamped_secs(1e300), Duration::MAX);
        assert_eq!(super::clamped_secs(f64::INFINITY), Duration::MAX);
        assert_eq!(super::clamped_secs(-3.0), Duration::ZERO);
        assert_eq!(super::clamped_secs(f64::NAN), Duration::ZERO);
    }
}
