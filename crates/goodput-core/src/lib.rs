//! goodput-core: the pure heart of goodput. No network, no async: every
//! number in a report is a function of the records and scrapes, defined
//! here. Its folders:
//!
//! - [`doc`]: the result document (docs/result.md) and its parts, the types
//!   a run or a sweep writes and `report`, `compare` and `merge` read back:
//!   the per-request record and its packed chunks, the run's configuration,
//!   the measurement window, the simulated engine's block, shards, sweeps.
//! - [`analysis`]: what the records say, as docs/metrics.md defines it: the
//!   per-request metrics, exact statistics, the run's summary, SLOs and
//!   goodput, stability, ratings, cost, per-model and per-session views,
//!   time slices, and a document assembled from records.
//! - [`load`]: the load's rules (arrivals, users, ramp-up and steps,
//!   warm-up, bounds, sessions' turns, the run's end) as one clock-agnostic
//!   dispatcher that the live client and the engine's virtual time drive.
//! - [`quality`]: answer quality beside speed: the scorers, a run's scores
//!   and two runs' answers compared.
//! - [`prometheus`]: the server's `/metrics` parsed, mapped to signals and
//!   diagnosed ([`prometheus::scrape`]), and goodput's own live metrics
//!   rendered as Prometheus text ([`prometheus::live`]).
//! - [`util`]: bounded reading of the files a command is given
//!   ([`util::input`], the one I/O here, shared by every reader so that each
//!   has the same bounds and says the same things), deterministic draws,
//!   secrets redacted, durations as integer nanoseconds.
//!
//! The most used types are re-exported at the root (below); everything else
//! is named by its folder. The JSON Schema derives of the document's types
//! are behind the `schema` feature.

/// `eprintln!` that never panics: a standard error that went away (`2>&1 |
/// head`, a closed terminal, `2>&-`) is no reason to stop a command, let
/// alone to lose the outputs it has still to write (`eprintln!` panics
/// there, and the process ended with the files unwritten).
#[macro_export]
macro_rules! tell {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}

/// [`tell!`] without the newline (`eprint!`'s counterpart).
#[macro_export]
macro_rules! tell_part {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::write!(::std::io::stderr(), $($arg)*);
    }};
}

pub mod analysis;
pub mod doc;
pub mod load;
pub mod prometheus;
pub mod quality;
pub mod util;

// The types and functions nearly every crate names, at the root so that a
// `use goodput_core::{RequestRecord, RunResult, analyze}` need not spell out
// their folders. Everything else is named by its path.
pub use analysis::metrics::RequestMetrics;
pub use analysis::slice::TimeSlice;
pub use analysis::slo::{Slo, SloError, SloReport};
pub use analysis::stats::{percentile, Distribution, Repeated};
pub use analysis::summary::{analyze, Analysis, AnalysisOptions, Summary, VllmCompat};
pub use doc::config::{RunConfig, SweepConfig};
pub use doc::record::{
    apportion, chunk_counts, spread_evenly, tokenizer_fits, Channel, ChunkTokenSource, Chunks, CountSource,
    FailureKind, Outcome, OutputChunk, RequestRecord, SessionTurn, TokenCounts,
};
pub use doc::result::{
    ClientCost, ClientStall, ClientStalls, Compat, Diagnosis, DiagnosisKind, RunResult, Target, Tool, Window, SCHEMA,
};

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
