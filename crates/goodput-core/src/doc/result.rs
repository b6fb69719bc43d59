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
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Compat {
    pub vllm: VllmCompat,
}
