//! The result document (docs/result.md): one run, schema `goodput/v1`.

use crate::analysis::cost::CostReport;
use crate::analysis::slo::SloReport;
pub use crate::analysis::summary::Window;
use crate::analysis::summary::{Summary, VllmCompat};
use crate::doc::config::RunConfig;
use crate::doc::record::RequestRecord;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The schema tag every result document carries.
pub const SCHEMA: &str = "goodput/v1";

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RunResult {
    /// `goodput/v1`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = SCHEMA)))]
    pub schema: String,
    pub tool: Tool,
    /// The command that produced it (`bench`, `estimate`), or `import` for
    /// another tool's result read by `report` (docs/peers.md).
    #[cfg_attr(feature = "schema", schemars(extend("enum" = ["bench", "estimate", "import"])))]
    pub kind: String,
    /// Wall-clock start, seconds since the Unix epoch: the zero of every
    /// `_ns` time in the records, so they line up with a server's logs.
    pub started_unix_s: f64,
    /// Names the run: its records (`--records`) carry the same `run_id`, so
    /// that `report` can refuse records of another run.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub run_id: String,
    /// True when the run was stopped early (Ctrl-C or SIGTERM) and holds what was measured until then.
    #[serde(default)]
    pub interrupted: bool,
    /// Why the run stopped sending: every request sent, its duration over,
    /// a stopping rule decided (`--until`, `--stop-on-slo`), its cap
    /// reached with the rule undecided, or Ctrl-C. Absent in documents of
    /// goodput before it said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<crate::analysis::until::Stop>,
    /// Everything needed to rerun it, secrets redacted.
    pub config: RunConfig,
    pub target: Target,
    pub window: Window,
    pub summary: Summary,
    /// The SLO the run was judged against, objective by objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostReport>,
    /// Joules per output token and output tokens/s per provisioned megawatt:
    /// the simulated engine's power model (`estimate`), or the GPUs' energy
    /// counters where a run scraped them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::analysis::energy::EnergyReport>,
    pub compat: Compat,
    /// The simulated engine's own view of the run (`estimate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<crate::doc::engine::SimulatedEngine>,
    /// The server's own metrics scraped during the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_signals: Option<crate::prometheus::scrape::ServerSignals>,
    /// What the client itself cost while it ran (`bench`, Linux).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientCost>,
    /// The client's own stalls (`bench`): times it was stopped or starved
    /// past the threshold, seen on its own clock. Absent when it saw none
    /// (and on `estimate`, and documents of goodput before it looked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_stalls: Option<ClientStalls>,
    #[serde(default)]
    pub warnings: Vec<String>,
    /// What the numbers suggest, each line backed by the figures it cites.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<Diagnosis>,
    /// This run is one shard of a run split over several processes
    /// (`bench --shard I/N`): which, and of what run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::doc::shard::ShardInfo>,
    /// This run was merged from the shards of one (`goodput merge`): from
    /// which, and how well their clocks agreed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge: Option<crate::doc::shard::MergeInfo>,
    /// The run was repeated (`--runs N`): the top level is the first run,
    /// and this block holds every run's headline figures and their spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<crate::doc::repeats::Repeats>,
    /// Per-request records, only when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<Vec<RequestRecord>>,
}

/// The client's own CPU over a run: the evidence that it was not the
/// bottleneck, measured on every run rather than claimed. A goodput-started
/// server's threads (the embedded simulator) are not counted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ClientCost {
    /// CPU time (user and system) of the client's threads over the run.
    pub cpu_s: f64,
    /// From the first send to the last record.
    pub wall_s: f64,
    /// `cpu_s / wall_s`: the cores the client kept busy.
    pub cores: f64,
    /// CPUs the process may run on.
    pub cpus: u32,
    /// CPU per output-bearing chunk read and per output token, over every
    /// measured and warm-up request.
    pub cpu_us_per_chunk: Option<f64>,
    pub cpu_us_per_output_token: Option<f64>,
}

impl ClientCost {
    /// The cost of `cpu_s` over `wall_s` with `cores` kept busy of `cpus`,
    /// per output-bearing chunk and per output token of `records`.
    pub fn over(cpu_s: f64, wall_s: f64, cores: f64, cpus: u32, records: &[RequestRecord]) -> ClientCost {
        let chunks: usize = records.iter().map(|r| r.chunks.len()).sum();
        let tokens = crate::analysis::stats::total(records.iter().map(|r| r.output_tokens));
        let per = |n: f64| (n > 0.0).then(|| cpu_s * 1e6 / n);
        ClientCost {
            cpu_s,
            wall_s,
            cores,
            cpus,
            cpu_us_per_chunk: per(chunks as f64),
            cpu_us_per_output_token: per(tokens as f64),
        }
    }
}

/// The times the client itself fell behind: a watchdog on its runtime,
/// ticking every few milliseconds on the monotonic clock (which runs on
/// while the process is stopped), found it had not run for longer than
/// `threshold_ms` (SIGSTOP, a paused or starved runtime, CPU throttling).
/// Bytes that came in meanwhile waited in the socket, and a read stamp
/// (even the kernel's, which stamps a read with its last segment) can make
/// them look later than the server sent them: a request in flight over a
/// stall is flagged (`client_stalled`) and its times are upper bounds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ClientStalls {
    /// A gap between two times the watchdog saw the client running longer
    /// than this is a stall (its tick and the lateness past it together).
    pub threshold_ms: f64,
    pub count: u64,
    /// The stalls' lengths summed, and the longest; each from the last time
    /// the client was seen running to the first time it ran again (at most
    /// a tick longer than the stop itself).
    pub total_ms: f64,
    pub longest_ms: f64,
    /// Requests due or in flight over a stall (records' `client_stalled`),
    /// warm-up included.
    pub requests: u64,
    /// The stalls, in order (the first [`ClientStalls::LISTED`]).
    pub stalls: Vec<ClientStall>,
}

/// One stall on the run's clock (nanoseconds from its origin, as records').
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ClientStall {
    #[serde(rename = "start_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub start: Duration,
    #[serde(rename = "end_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub end: Duration,
}

impl ClientStall {
    /// Whether the stall overlaps a request in flight from `sent` to `end`.
    pub fn touches(&self, sent: Duration, end: Duration) -> bool {
        self.start < end && self.end > sent
    }
}

impl ClientStalls {
    /// At most this many stalls are listed; the figures count them all.
    pub const LISTED: usize = 100;

    /// The figures of `stalls` (in order), seen with `threshold`, over
    /// `records` (already flagged); `None` when there were none.
    pub fn over(stalls: &[ClientStall], threshold: Duration, records: &[RequestRecord]) -> Option<ClientStalls> {
        if stalls.is_empty() {
            return None;
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let len = |s: &ClientStall| s.end.saturating_sub(s.start);
        Some(ClientStalls {
            threshold_ms: ms(threshold),
            count: stalls.len() as u64,
            total_ms: stalls.iter().map(|s| ms(len(s))).sum(),
            longest_ms: stalls.iter().map(|s| ms(len(s))).fold(0.0, f64::max),
            requests: records.iter().filter(|r| r.client_stalled).count() as u64,
            stalls: stalls.iter().take(Self::LISTED).copied().collect(),
        })
    }
}

/// The latest wall-clock start a result may say: 2200-01-01 00:00:00 UTC,
/// in seconds since the Unix epoch.
pub const LATEST_START_UNIX_S: f64 = 7_258_118_400.0;

/// Whether `s` can be a run's wall-clock start (`started_unix_s`, a shard's
/// `--start-at`): a number of seconds since the Unix epoch from 0 (an
/// imported run whose file gives no start) to [`LATEST_START_UNIX_S`]. A
/// shard that said 1e308 had panicked `merge`, and one that said -1e12 had
/// been merged into a window of 1e12 s.
pub fn plausible_start(s: f64) -> bool {
    s.is_finite() && (0.0..=LATEST_START_UNIX_S).contains(&s)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// The commit the binary was built from, `-modified` when its tree
    /// differed; absent when built outside git.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Target {
    pub url: String,
    pub model: String,
    /// `chat` or `completions`.
    pub api: String,
    /// True when goodput started the server itself (the embedded default).
    #[serde(default)]
    pub embedded: bool,
    /// The server's own name for itself (`Server` header), when it gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
}

/// One finding about a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Diagnosis {
    pub kind: DiagnosisKind,
    /// The finding in words, with the figures it rests on.
    pub message: String,
}

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    /// Requests waited at the server for want of room in the batch.
    QueueBuildUp,
    /// The server's own queue time, set beside TTFT.
    QueueWait,
    /// The KV cache ran full: preemptions, or admissions held back.
    KvCachePressure,
    /// Prompts served from the prefix cache, and what it saved.
    PrefixCache,
    /// TTFT grows with the prompt beyond what compute explains.
    PrefillScaling,
    /// Long prefills stalled the decodes beside them.
    PrefillStalls,
    /// The tail grew over the run.
    TailDegrading,
    /// The client, not the server, may have limited the run.
    ClientBottleneck,
    /// goodput's simulated server fell behind its own timeline (a busy
    /// machine): the latencies carry that lateness, not the engine's.
    SimulatorLate,
    /// goodput's simulated server ran at `--speed` above 1 under a closed
    /// loop whose turn from an answer to the next request (client, network,
    /// HTTP) is a sizeable part of a step: that turn is not sped up, so it
    /// moves the loop's requests against the engine's steps.
    SimulatorSpeed,
    /// A speculating server's acceptance, and how it moved with the batch.
    SpeculativeDecoding,
    /// A disaggregated deployment's KV-cache transfers and the prefill and
    /// decode pools' queues, set beside TTFT.
    KvTransfer,
    /// A closed loop's users sent their requests in waves: each wave's
    /// prompts prefill together, and TTFT measures a wave.
    Lockstep,
    /// The requests a closed loop's users sent together at the start,
    /// slower than the rest, are the tail of the run's TTFT percentiles.
    StartWave,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Compat {
    pub vllm: VllmCompat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stalls_are_counted_summed_and_their_requests_taken_from_the_flags() {
        let ms = Duration::from_millis;
        assert_eq!(ClientStalls::over(&[], ms(50), &[]), None, "no stall, no block");
        let stalls = [ClientStall { start: ms(100), end: ms(160) }, ClientStall { start: ms(300), end: ms(800) }];
        let mut recs: Vec<RequestRecord> = (0..3).map(|i| RequestRecord::new(i, ms(0), ms(0))).collect();
        recs[1].client_stalled = true;
        let s = ClientStalls::over(&stalls, ms(50), &recs).unwrap();
        assert_eq!((s.count, s.requests, s.stalls.len()), (2, 1, 2));
        assert!((s.total_ms - 560.0).abs() < 1e-9 && (s.longest_ms - 500.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.threshold_ms, 50.0);
        // A request in flight over a stall touches it; one that ended as it began does not.
        assert!(stalls[1].touches(ms(200), ms(301)) && stalls[1].touches(ms(799), ms(900)));
        assert!(!stalls[1].touches(ms(200), ms(300)) && !stalls[1].touches(ms(800), ms(900)));
        // The document lists the first 100, and counts them all.
        let many: Vec<ClientStall> =
            (0..150).map(|i| ClientStall { start: ms(i * 100), end: ms(i * 100 + 60) }).collect();
        let s = ClientStalls::over(&many, ms(50), &recs).unwrap();
        assert_eq!((s.count, s.stalls.len()), (150, ClientStalls::LISTED));
        let json = serde_json::to_string(&s.stalls[0]).unwrap();
        assert_eq!(json, r#"{"start_ns":0,"end_ns":60000000}"#);
    }
}
