//! A result's `engine` block: what the simulated engine did in an estimate
//! (batches, preemptions, prefix hits, KV capacity) and its KV use and
//! queues over virtual time.

#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The simulated engine's own view of a run (`estimate`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct SimulatedEngine {
    /// The engine simulated: model, GPU, precision, parallelism, vLLM's
    /// limits and the step-time constants (docs/simulator.md).
    pub config: crate::doc::config::EngineSettings,
    /// Engine steps taken.
    pub steps: u64,
    pub mean_batch_seqs: f64,
    pub mean_batch_tokens: f64,
    pub max_batch_seqs: u32,
    /// Requests whose KV blocks were taken back, to be recomputed (under
    /// SGLang's scheduler, its retractions).
    pub preemptions: u64,
    /// Prompt tokens looked up in the prefix cache, and found there.
    pub prefix_cache_queries_tokens: u64,
    pub prefix_cache_hits_tokens: u64,
    pub prefix_cache_hit_rate: Option<f64>,
    /// Tokens the KV cache holds when full.
    pub kv_capacity_tokens: u64,
    /// Where an expert-parallel group's attention ranks each keep their own
    /// cache: the tokens one rank's holds, the most one request may hold
    /// (the smallest such share of the run's instances).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_rank_tokens: Option<u64>,
    pub max_num_seqs: u32,
    /// Virtual time the engine was stepping, and from the first arrival to
    /// the last token.
    pub busy_s: f64,
    pub makespan_s: f64,
    /// The most of the KV capacity held at once, 0..1.
    pub kv_usage_max: f64,
    /// Disaggregated: the mean time a request's KV took from the end of its
    /// prefill to its landing on a decode instance (its wait for the link
    /// included), seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_transfer_mean_s: Option<f64>,
    /// With speculative decoding: the acceptance the engine's draws
    /// achieved, as a live run's `server_signals.window.spec_decode` gives
    /// it from vLLM's counters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<EngineSpecDecode>,
    /// Virtual time the front end spent on its serial work (per request,
    /// per prompt token, per streamed token: the calibration's
    /// `frontend_serial_*`), when it has any. Near `makespan_s`, the front
    /// end, not the engine, set the pace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frontend_busy_s: Option<f64>,
    pub series: EngineSeries,
    /// Each data-parallel replica's share, in replica order; empty with one
    /// replica (the figures above are then its own).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<ReplicaShare>,
    /// How far these figures can be trusted, in words: the GPU's family
    /// uncalibrated, and, where requests overlapped as in the public
    /// measurements it was checked on, the TTFT's error there
    /// (docs/simulator.md, "Said where the engine's figures are shown").
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl SimulatedEngine {
    /// Whether its scheduler calls taking a request's KV blocks back a
    /// retraction (SGLang's) rather than a preemption (vLLM's; TensorRT-LLM's
    /// never does it).
    pub fn retracts(&self) -> bool {
        self.config.scheduler == "sglang"
    }

    /// What its scheduler calls the requests whose KV blocks were taken
    /// back ([`SimulatedEngine::retracts`]).
    pub fn preemptions_word(&self) -> &'static str {
        if self.retracts() {
            "retractions"
        } else {
            "preemptions"
        }
    }
}

/// The simulated engine's speculative decoding over the whole run (warm-up
/// included), from the counters vLLM exports (`vllm:spec_decode_*`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct EngineSpecDecode {
    /// Proposals (one a decoding sequence a step) and the draft tokens they held.
    pub drafts: u64,
    pub draft_tokens: u64,
    /// Draft tokens accepted / draft tokens proposed.
    pub acceptance_rate: Option<f64>,
    /// Tokens a speculative step yields per sequence, the bonus token
    /// included: 1 + accepted / proposals.
    pub mean_accepted_length: Option<f64>,
    /// Per draft position, the share of proposals whose token at that
    /// position was accepted: the first is `--spec-acceptance`'s figure,
    /// and the rest fall with the position.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub acceptance_by_position: Vec<f64>,
}

impl EngineSpecDecode {
    /// From the engine's counters: `None` where nothing was proposed.
    pub fn of(drafts: u64, draft_tokens: u64, accepted: u64, by_position: &[u64]) -> Option<EngineSpecDecode> {
        (drafts > 0).then(|| EngineSpecDecode {
            drafts,
            draft_tokens,
            acceptance_rate: (draft_tokens > 0).then(|| accepted as f64 / draft_tokens as f64),
            mean_accepted_length: Some(1.0 + accepted as f64 / drafts as f64),
            acceptance_by_position: by_position.iter().map(|&n| n as f64 / drafts as f64).collect(),
        })
    }
}

/// What one data-parallel replica of the simulated engine did: how evenly
/// the router spread the load, and what each replica's cache found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct ReplicaShare {
    /// Requests the router sent it (warm-up included).
    pub requests: u64,
    pub prompt_tokens: u64,
    pub generation_tokens: u64,
    pub preemptions: u64,
    pub prefix_cache_hit_rate: Option<f64>,
    /// Virtual time it spent in steps.
    pub busy_s: f64,
}

/// Samples over virtual time, one column each.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct EngineSeries {
    pub t_s: Vec<f64>,
    /// 0..1 of the KV capacity.
    pub kv_usage: Vec<f64>,
    /// Requests in the running batch, and waiting for admission.
    pub running: Vec<u32>,
    pub waiting: Vec<u32>,
}
