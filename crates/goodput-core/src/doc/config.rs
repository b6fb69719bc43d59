//! The `config` block of a result document (docs/result.md): everything
//! needed to rerun a run or a sweep, secrets redacted. Written by every
//! command and read back by `report`, `compare` and the exporters through
//! these types, never by key.
//!
//! Forms kept as they have been since `goodput/v1` began: durations are
//! humantime strings (`"2s"`, `"1m 30s"`), an unbounded rate is `"inf"`,
//! a length distribution is its flag's text (`"256"`, `"uniform:64..256"`).
//! A setting that does not apply is `null` where the block has always
//! written it so, and absent where it has always been left out; both read
//! as `None`. Fields are declared in key order, so that a document is
//! written with its keys in the order they always had.
//!
//! Keys these types do not know (a later version's settings, or a
//! hand-edited document's) are kept in `extra` and written back: `report`
//! rewrites a run's config, and must not drop what it cannot name.

use crate::analysis::cost::CostConfig;
use crate::analysis::ratings::RatingThresholds;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::collections::BTreeMap;

/// Keys of a block that its type does not name, kept as they were.
pub type Extra = BTreeMap<String, Value>;

/// A run's `config`. Which blocks are present depends on the command:
/// `bench` writes `load`, `workload`, `client`, `percentiles` and `judge`;
/// `estimate` `engine` and `prompts` in place of `client`; a sweep's point
/// `load` and `workload`; an imported run `import`, `tool_settings`, `load`
/// and `percentiles`; `report` adds `report_window` when it re-analysed a
/// window of the run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct RunConfig {
    /// How the requests were sent (`bench`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientSettings>,
    /// The simulated engine (`estimate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSettings>,
    /// Where an imported run came from, and what its file cannot give.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub import: Option<ImportInfo>,
    /// The SLO, price and rating thresholds the run was judged with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge: Option<JudgeConfig>,
    /// `--label`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadConfig>,
    /// `--meta KEY=VALUE`, key by key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<BTreeMap<String, String>>,
    /// The percentiles reported for every latency metric.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Vec<f64>>,
    /// What the simulated server adds to prompts: `chat` (its template) or
    /// `raw` (BOS) (`estimate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<String>,
    /// The per-request records file of the run (`--records`), as a path
    /// from the folder of the document that holds it: `report` reads the
    /// records there to judge the run again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_file: Option<String>,
    /// The `--window` a `report` re-analysed the run over.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub report_window: Option<String>,
    /// The stopping rules the run was given (`--until`, `--stop-on-slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopping: Option<crate::analysis::until::StoppingConfig>,
    /// An imported run's own settings, as the other tool's file gives them:
    /// free-form, each tool has its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_settings: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadConfig>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The load: a closed loop (`concurrency`), an open loop (`rate`), a trace
/// replay (`trace`), with its bounds, warm-up and shape.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct LoadConfig {
    /// The open loop's arrival process: `poisson`, `gamma`, `constant`.
    pub arrival: Option<String>,
    /// Gamma arrivals' burstiness.
    pub burstiness: Option<f64>,
    /// The share of requests given up on, and when (`--cancel-rate`).
    pub cancel: Option<CancelConfig>,
    /// Users of a closed loop, or the cap on requests in flight of an open one.
    pub concurrency: Option<u64>,
    /// A bound on the measured part, a humantime string.
    pub duration: Option<String>,
    /// How long in-flight requests get to finish once sending stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace: Option<String>,
    pub ramp_up: Option<String>,
    /// Requests (or sessions) per second; `"inf"`: all at once.
    pub rate: Option<Rate>,
    /// Measured requests (sessions with `sessions`).
    pub requests: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Multi-turn sessions (`--turns`): `requests` and `rate` count sessions.
    pub sessions: Option<SessionsConfig>,
    /// The trace file replayed (`--trace`).
    pub trace: Option<String>,
    pub trace_speed: Option<f64>,
    /// Warm-up requests, left out of the figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<u64>,
    /// A timed warm-up, or the ramp-up, whichever is longer.
    pub warmup_time: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl LoadConfig {
    /// True when something other than a request count bounds or paces the
    /// load: a rate, a trace, a duration, or sessions.
    pub fn open_or_bounded(&self) -> bool {
        self.rate.is_some() || self.trace.is_some() || self.duration.is_some() || self.sessions.is_some()
    }
}

/// A rate in requests (or sessions) per second. JSON has no infinity: an
/// unbounded rate is written `"inf"`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub f64);

impl Rate {
    pub fn is_unbounded(self) -> bool {
        self.0.is_infinite()
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_infinite() {
            s.serialize_str("inf")
        } else {
            s.serialize_f64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Number(f64),
            Text(String),
        }
        match Form::deserialize(d)? {
            Form::Number(r) => Ok(Rate(r)),
            Form::Text(t) if t == "inf" => Ok(Rate(f64::INFINITY)),
            Form::Text(t) => Err(serde::de::Error::custom(format!(
                "a rate is a number of requests per second or \"inf\", not {t:?}"
            ))),
        }
    }
}

#[cfg(feature = "schema")]
impl JsonSchema for Rate {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Rate".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "Requests (or sessions) per second; \"inf\": all at once.",
            "anyOf": [{ "type": "number" }, { "const": "inf" }],
        })
    }
}

/// `--cancel-rate` and `--cancel-after`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct CancelConfig {
    /// When a picked request is given up on, a humantime string.
    pub after: String,
    /// The share of requests given up on (0..=1).
    pub rate: f64,
}

/// `--turns` and `--think-time`, as their flags' text.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SessionsConfig {
    pub think_time: String,
    pub turns: String,
}

/// The workload: synthetic lengths, a dataset, or a trace's requests.
/// Lengths are written as their flag's text (`"256"`, `"uniform:64..256"`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct WorkloadConfig {
    /// The prompts file (`--dataset`).
    pub dataset: Option<String>,
    /// Its entries (prompts, or conversations with `--turns`): a run that
    /// sends more goes round them again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_entries: Option<u64>,
    /// Entries of the dataset read and left out (an empty prompt, a
    /// conversation that asks nothing, a ShareGPT conversation whose first
    /// question got no answer): the run's warnings name each reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_skipped: Option<u64>,
    /// The dataset's prompt column, when named (`--dataset-column`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_column: Option<String>,
    pub ignore_eos: bool,
    /// Input lengths (none with a dataset or a trace).
    pub input_tokens: Option<String>,
    /// Output lengths (none with a dataset that gives its own, or a trace).
    pub output_tokens: Option<String>,
    /// `--preset`.
    pub preset: Option<String>,
    pub shared_prefix: Option<SharedPrefixConfig>,
    /// The tokenizer file (`--tokenizer`).
    pub tokenizer: Option<String>,
    /// A trace's requests (`--trace`), which give every request's lengths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceWorkload>,
    /// The scorers asked for (`--score`); absent: all that apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Vec<String>>,
    /// Records keep the prompt, answer and reference texts (`--keep-text`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_text: bool,
    /// Each prompt was sent this many times (`--repeat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `--shared-prefix-tokens`, `--shared-prefix-ratio`, `--shared-prefixes`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SharedPrefixConfig {
    pub count: u32,
    pub ratio: f64,
    pub tokens: u32,
}

/// What a replayed trace's requests are.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct TraceWorkload {
    pub input_tokens_mean: f64,
    pub output_tokens_mean: f64,
    pub requests: u64,
    /// Requests that name a shared prefix (goodput's `prefix_id`) or open
    /// with prefix blocks (Mooncake's `hash_ids`).
    pub with_prefix: u64,
    /// The file's format (`--trace-format`, or told from its first line):
    /// goodput, mooncake, azure or burstgpt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Lines the format marks as no request and that were not sent
    /// (BurstGPT's failed requests, of 0 response tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
    /// Prompt tokens that repeat a prefix an earlier request of the trace
    /// opened with (Mooncake's blocks, goodput's prefix ids): the prefix
    /// reuse the trace implies, what a server with room to cache every
    /// prefix could serve from its cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_prefix_tokens: Option<u64>,
}

/// How the client sent the requests. Secrets are never written: the API
/// key as `<redacted>`, headers by name only.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct ClientSettings {
    /// `chat`, `completions`, `messages`, …
    pub api: String,
    /// `<redacted>` when a key was given.
    pub api_key: Option<String>,
    /// The server goodput started itself, when it did.
    pub embedded: Option<EmbeddedServer>,
    /// `--embed-batch`: the inputs of each request of an embeddings run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embed_batch: Option<u32>,
    /// `--extra-body`: fields merged into every request body, as given.
    pub extra_body: serde_json::Map<String, Value>,
    /// `--header` names (their values may be secrets).
    pub headers: Vec<String>,
    pub include_usage: bool,
    /// How the key is sent: `bearer` or `x-api-key`.
    pub key_header: String,
    /// The model asked for; several comma-separated when spread over them.
    pub model: String,
    /// `--rerank-docs`: the documents of each query of a rerank run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rerank_docs: Option<u32>,
    /// Where a chunk's time is taken: `kernel` or `read`.
    pub stamp: String,
    pub stream: bool,
    /// The per-request timeout, a humantime string.
    pub timeout: String,
    /// The HTTP client: `goodput http/1.1` or `reqwest`.
    pub transport: String,
    pub url: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The embedded server's settings, by profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(tag = "profile", rename_all = "snake_case")]
pub enum EmbeddedServer {
    /// The simulated engine: `dp` replicas (absent for one) behind `router`.
    Engine {
        chat_template: String,
        gpu: String,
        model: String,
        precision: String,
        tp: u32,
        #[serde(default = "one_u32", skip_serializing_if = "one_replica")]
        dp: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        router: Option<String>,
        /// Prefill/decode disaggregation, `P:D` instances, when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pd: Option<String>,
        /// The replicas balanced by vLLM's own rule, one `vllm serve
        /// --data-parallel-size`, in `router`'s place (`--sim-internal-lb`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        internal_lb: bool,
        /// Its front ends (`--sim-api-server-count`), when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        api_server_count: Option<u32>,
        /// Its other engine flags as `--sim-engine` gave them
        /// (`--pp 2 --spec-tokens 3`), when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        engine_flags: Option<String>,
    },
    /// Fixed timing; `ttft` and `itl` humantime strings.
    Fixed { itl: String, tokens_per_chunk: u32, ttft: String },
}

/// The judging settings as they were applied.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct JudgeConfig {
    /// The price of the hardware (`--gpu-hour-usd`, `--gpus`).
    pub cost: Option<CostConfig>,
    pub ratings: RatingThresholds,
    /// The SLO as text (`ttft<=200ms,tpot:p95<=50ms`), the form `--slo` takes.
    pub slo: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The simulated engine's settings (`estimate`, `sweep --estimate`), the
/// effective values: `max_num_seqs` resolved, the calibration with any
/// overlay applied.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct EngineSettings {
    pub block_size: u32,
    /// The roofline model's constants, by name (`eta_compute`, `c_step_us`, …).
    pub calibration: BTreeMap<String, f64>,
    /// The chat template's name.
    pub chat_template: String,
    pub enable_chunked_prefill: bool,
    pub enable_prefix_caching: bool,
    pub gpu: String,
    pub gpu_memory_utilization: f64,
    pub kv_cache_dtype: String,
    pub max_num_batched_tokens: u32,
    pub max_num_seqs: u32,
    pub model: String,
    pub precision: String,
    pub tp: u32,
    /// Data-parallel replicas, each on `tp` GPUs; absent for one.
    #[serde(skip_serializing_if = "one_replica")]
    pub dp: u32,
    /// The router in front of the replicas, with `dp` > 1, or of each pool
    /// of a disaggregated engine: `round-robin`, `least-loaded`,
    /// `prefix-aware` or `power-of-two`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<String>,
    /// Seconds between the polls of the loads that `power-of-two` compares
    /// (SGLang's router's load monitor); absent: its live counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router_poll_s: Option<f64>,
    /// Speculative decoding, when the engine drafts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeSettings>,
    /// Whose batch scheduler the engine ran: `vllm` (preemption with
    /// recompute), `trtllm` (TensorRT-LLM's guaranteed-no-evict
    /// admission) or `sglang` (SGLang's admission by its new-token ratio,
    /// with retraction); empty in documents written before it was
    /// recorded, which ran vLLM's.
    pub scheduler: String,
    /// SGLang's `--schedule-conservativeness`, under its scheduler (the
    /// new-token ratio starts at 0.7 times it); absent under the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_conservativeness: Option<f64>,
    /// SGLang's `--scheduler-recv-interval`, where above 1: new requests
    /// taken only once that many decode steps ran since the last time (a
    /// prompt's step counting as all of them); absent at SGLang's default
    /// of every step, and under the other schedulers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_recv_interval: Option<u32>,
    /// SGLang's `--max-prefill-tokens`, where not its default of 16,384:
    /// the prompt tokens one step takes past its first prompt's; absent at
    /// the default, and under the other schedulers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_prefill_tokens: Option<u32>,
    /// TensorRT-LLM's `batch_wait_timeout_iters` and
    /// `batch_wait_max_tokens_ratio`, where either is set: a step's prompts
    /// held back beside decodes for up to that many steps in a row, until
    /// the step's tokens reach that share of its budget; absent at
    /// TensorRT-LLM's default of never, and under the other schedulers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_wait_timeout_iters: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_wait_max_tokens_ratio: Option<f64>,
    /// What an MXFP4 mixture of experts' expert products multiply against,
    /// where `--mxfp4-activations` named it: `fp8` (W4A8, MXFP4 × MXFP8) or
    /// `bf16` (W4A16); absent, the server's own on the GPU (vLLM's 16-bit;
    /// SGLang's and TensorRT-LLM's FP8 on FP4 tensor cores; 16-bit without
    /// them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mxfp4_activations: Option<String>,
    /// SGLang's `--load-balance-method` as given, where its ranks of DP
    /// attention chose by another than its default (`round-robin`,
    /// `follow-bootstrap-room`, `total-requests` or `total-tokens`; under
    /// disaggregation `P:D`, the prefill pool's and the decode pool's, e.g.
    /// `auto:total-tokens`); absent under SGLang's default (`auto`: the
    /// ranks in turn, or on a disaggregated prefill instance the rank the
    /// bootstrap room names) and under the other schedulers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balance_method: Option<String>,
    /// `true` when vLLM's own front end balanced a dense model's `dp`
    /// replicas (`--internal-lb`: one `vllm serve --data-parallel-size`,
    /// each request to the replica of least 4 × waiting + running requests
    /// as its coordinator last published them), in the router's place
    /// (`router` absent); absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub internal_lb: bool,
    /// With `internal_lb`, vLLM's API servers (`--api-server-count`, by
    /// default one a replica): each front end balances on its own counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_server_count: Option<u32>,
    /// `false` when a step that computes a prompt decoded nothing (SGLang's
    /// default, vLLM V0's without chunked prefill: `--no-mixed-batches`);
    /// absent when prompts and decodes shared steps, vLLM V1's and
    /// TensorRT-LLM's in-flight batching.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mixed_batches: Option<bool>,
    /// `true` when the scheduler chose each step while the one before ran
    /// (vLLM's async scheduling, TensorRT-LLM's overlap scheduler, SGLang's
    /// overlap schedule: the default, as those servers run by default), a
    /// request reaching a busy engine joining the step after next; `false`
    /// when each step was chosen after the one before ended
    /// (`--no-async-scheduling`). Absent in documents of earlier goodput
    /// releases, whose engine chose each step so unless given
    /// `--async-scheduling`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub async_scheduling: Option<bool>,
    /// The GPU's family (`hopper`, `ampere`, `ada`, `blackwell`,
    /// `blackwell-rtx`, `cdna3`, `cdna4`), whose constants the step times
    /// come from.
    pub gpu_family: String,
    /// Whether that family's constants were fitted to public measurements
    /// of it (`hopper`'s, `blackwell`'s and `cdna3`'s are); `false`: it runs on another family's constants,
    /// and its times are unchecked. Absent in documents written before it
    /// was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibrated: Option<bool>,
    /// Where `calibrated` is false, the family whose constants it runs on
    /// (`cdna3` for `cdna4`, `hopper` for the others). Absent where
    /// calibrated, and in documents written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constants_from: Option<String>,
    /// Prefill/decode disaggregation, when the engine runs separate pools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pd: Option<PdSettings>,
    /// Expert-parallel size (vLLM's: TP × the data-parallel ranks that
    /// share the experts); absent for none.
    #[serde(skip_serializing_if = "one_replica")]
    pub ep: u32,
    /// Pipeline-parallel stages, each on `tp` GPUs; absent for one.
    #[serde(skip_serializing_if = "one_replica")]
    pub pp: u32,
}

/// The simulated engine's prefill and decode pools and the KV link
/// between them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PdSettings {
    /// Prefill instances, each on `tp` × `pp` GPUs.
    pub prefill: u32,
    /// Decode instances, each on `tp` × `pp` GPUs.
    pub decode: u32,
    /// The decode pool's own tensor-parallel size where it differs from the
    /// prefill pool's, which is `tp` (`--pd 4xTP1:1xTP4`: `tp` 1,
    /// `decode_tp` 4); absent when both run on `tp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_tp: Option<u32>,
    /// The decode pool's own expert-parallel size where it differs from the
    /// prefill pool's, which is `ep` (`--pd 1xEP8:1xEP16`); absent when both
    /// run on `ep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_ep: Option<u32>,
    /// Where the link's figures came from: `node` (the GPUs' interconnect,
    /// both pools in one NVLink domain: 8 GPUs, 72 on GB200), `network` (a
    /// NIC per GPU) or `given`.
    pub kv_link: String,
    /// The link's bandwidth per GPU and direction, Gb/s.
    pub kv_link_gbps: f64,
    /// A transfer's fixed cost, µs.
    pub kv_link_latency_us: f64,
}

/// The data-parallel ranks one instance of `tp` GPUs a rank drives: an
/// expert-parallel group of `ep` GPUs is `ep / tp` ranks sharing one
/// scheduler (`ep` 1: no expert parallelism, one rank).
pub fn ep_ranks(tp: u32, ep: u32) -> u32 {
    if ep > 1 {
        (ep / tp.max(1)).max(1)
    } else {
        1
    }
}

/// One rank's share of a limit SGLang's DP attention reads for the whole
/// group and splits over its `ranks` (`--chunked-prefill-size` and
/// `--max-running-requests`: `// dp_size`, at least one).
pub fn dp_attention_share(group: u32, ranks: u32) -> u32 {
    (group / ranks.max(1)).max(1)
}

/// Every GPU of a prefill pool and a decode pool, each given as (instances,
/// TP, EP): an instance is its TP times its expert-parallel ranks
/// ([`ep_ranks`]) GPUs, times `pp` stages.
pub fn pool_gpus(pools: [(u32, u32, u32); 2], pp: u32) -> u32 {
    let pool = |(n, tp, ep): (u32, u32, u32)| n.saturating_mul(tp.max(1).saturating_mul(ep_ranks(tp, ep)));
    pp.max(1).saturating_mul(pool(pools[0]).saturating_add(pool(pools[1])))
}

/// One pool of a disaggregation spec: its instances, and its own TP and EP
/// where it names them.
pub type PdSide = (u32, Option<u32>, Option<u32>);

/// A disaggregation spec `P:D` (`--pd`, a grid's `pd`): the prefill and
/// the decode pool, each its instances and, where it names them, its own
/// tensor- and expert-parallel sizes (`4xTP1:1xTP4`, `1xEP8:1xEP16`,
/// `1xTP2xEP8:1`; `x` or `×`, any case, each size once a side). `None`
/// where the text is not so: the simulator's parser and a grid's reading
/// of its pools are this one.
pub fn pd_sides(text: &str) -> Option<[PdSide; 2]> {
    let side = |s: &str| -> Option<PdSide> {
        let s = s.trim().to_ascii_lowercase();
        let mut parts = s.split(['x', '\u{d7}']).map(str::trim);
        let n = parts.next()?.parse().ok()?;
        let (mut tp, mut ep) = (None, None);
        for part in parts {
            let (slot, size) = match (part.strip_prefix("tp"), part.strip_prefix("ep")) {
                (Some(k), _) => (&mut tp, k),
                (_, Some(m)) => (&mut ep, m),
                _ => return None,
            };
            if slot.replace(size.trim().parse().ok()?).is_some() {
                return None;
            }
        }
        Some((n, tp, ep))
    };
    let (p, d) = text.trim().split_once(':')?;
    Some([side(p)?, side(d)?])
}

/// vLLM's own balancing of a dense model's replicas in words, over
/// `api_servers` front ends, as the simulator's banner and the terminal
/// name it.
pub fn vllm_balancer_words(api_servers: u32) -> String {
    match api_servers {
        0 | 1 => "vLLM's balancer, least 4 × waiting + running".into(),
        n => format!("vLLM's balancer, least 4 × waiting + running, over {n} API servers"),
    }
}

/// What `--mxfp4-activations` named, in words, as the simulator's banner
/// and the report's engine line say it: `fp8` and `bf16` by their kernels'
/// names (W4A8, W4A16); anything else as given.
pub fn mxfp4_activation_words(activations: &str) -> String {
    match activations {
        "fp8" => "MXFP4 experts against FP8 activations (W4A8)".into(),
        "bf16" => "MXFP4 experts against 16-bit activations (W4A16)".into(),
        other => format!("MXFP4 experts against {other} activations"),
    }
}

/// TensorRT-LLM's batch waiting in words (`batch_wait_timeout_iters`
/// steps, `batch_wait_max_tokens_ratio` of the step's tokens), as the
/// simulator's banner and the report's engine line name it; `None` where
/// neither is set. The ratio alone holds nothing (TensorRT-LLM's count
/// starts at its limit, 0), and says so.
pub fn batch_wait_words(steps: u32, ratio: f64) -> Option<String> {
    match (steps, ratio > 0.0) {
        (0, false) => None,
        (0, true) => Some(format!("batch-wait ratio {ratio} without a timeout (no prompt held)")),
        (n, false) => Some(format!("prompts held beside decodes for {n} steps")),
        (n, true) => {
            Some(format!("prompts held beside decodes up to {n} steps, until the step reaches {ratio} of its tokens"))
        }
    }
}

impl EngineSettings {
    /// Whether SGLang's `load_balance_method` picks among a dense model's
    /// replicas (its data-parallel controller in front of `dp` replicas
    /// without DP attention, not disaggregated) rather than among ranks of
    /// DP attention.
    pub fn balances_replicas(&self) -> bool {
        self.pd.is_none() && ep_ranks(self.tp, self.ep) <= 1
    }

    /// A disaggregated engine's pools in words ([`PdSettings::pools_words`]),
    /// with the pools' router where it is not the default least-loaded:
    /// `2 prefill + 1 decode instances (prefix-aware)`; `None` when not
    /// disaggregated.
    pub fn pools_routed(&self) -> Option<String> {
        let pd = self.pd.as_ref()?;
        let routed = match self.router.as_deref() {
            Some(r) if r != "least-loaded" => format!(" ({r})"),
            _ => String::new(),
        };
        Some(format!("{}{routed}", pd.pools_words(self.tp, self.ep)))
    }
}

impl PdSettings {
    /// The pools in words, `2 prefill + 1 decode instances`, each pool's TP
    /// and EP named where they differ (`tp`, `ep`: the prefill pool's).
    pub fn pools_words(&self, tp: u32, ep: u32) -> String {
        if self.decode_tp.is_none() && self.decode_ep.is_none() {
            return format!("{} prefill + {} decode instances", self.prefill, self.decode);
        }
        let sizes = |tp: u32, ep: u32| if ep > 1 { format!("TP {tp}, EP {ep}") } else { format!("TP {tp}") };
        format!(
            "{} prefill ({}) + {} decode ({}) instances",
            self.prefill,
            sizes(tp, ep),
            self.decode,
            sizes(self.decode_tp.unwrap_or(tp), self.decode_ep.unwrap_or(ep))
        )
    }

    /// Every GPU of both pools, each instance on its pool's TP times its
    /// expert-parallel ranks (EP / TP) times `pp` stages (`tp`, `ep`: the
    /// prefill pool's).
    pub fn gpus(&self, tp: u32, ep: u32, pp: u32) -> u32 {
        let decode = (self.decode, self.decode_tp.unwrap_or(tp), self.decode_ep.unwrap_or(ep));
        pool_gpus([(self.prefill, tp, ep), decode], pp)
    }
}

/// The simulated engine's speculative decoding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SpecDecodeSettings {
    /// Draft tokens proposed per sequence a step.
    pub tokens: u32,
    /// The chance that a draft token is accepted when every one before it
    /// was: position `i` (from 0) is accepted in `acceptance^(i+1)` of the
    /// proposals.
    pub acceptance: f64,
    /// The drafter's time per draft token, as a share of the verifying
    /// step's time.
    pub draft_cost: f64,
}

fn one_u32() -> u32 {
    1
}

fn one_replica(dp: &u32) -> bool {
    *dp <= 1
}

/// What an import says about itself, kept as `config.import`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ImportInfo {
    /// A run length the file gives where it has no send times: the window
    /// and every rate are taken over it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<f64>,
    /// The file's format, in words.
    pub format: String,
    /// Summary figures the file cannot give by goodput's definitions: left
    /// empty (distributions) or 0 (rates), named by their place in the
    /// result (`summary.itl_ms`, `compat.vllm.itl`).
    pub not_recomputed: Vec<String>,
    /// What the file could not give, or gives otherwise than goodput
    /// measures: the run's first warnings.
    pub notes: Vec<String>,
    /// The file read.
    pub source: String,
    /// The tool that wrote the file (`vllm bench serve`, `aiperf`, `guidellm`).
    pub tool: String,
    /// Its version, as the file gives it (`unknown` where it does not).
    pub version: String,
}

/// A sweep's `config`: how its loads were chosen and what every point
/// shares (each point's own `load` is in its result's config).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct SweepConfig {
    /// Attainment a point must reach, beside passing every objective, to
    /// count as meeting the SLO.
    pub attainment_target: f64,
    /// `--duration` of each point, a humantime string.
    pub duration_per_point: Option<String>,
    /// The simulated engine (`--estimate`); `null` when sweeping a server.
    pub engine: Option<EngineSettings>,
    pub estimate: bool,
    pub judge: JudgeConfig,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub max_concurrency: u64,
    /// The sweep's seed (`--seed`, or drawn fresh): each point's own, in
    /// its result's `config.load.seed`, is drawn from it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<BTreeMap<String, String>>,
    /// `concurrency`, `rate`, `auto` or `stages` (one run in stages, each
    /// a point).
    pub mode: String,
    pub percentiles: Vec<f64>,
    /// `--requests` of each point.
    pub requests_per_point: Option<u64>,
    pub workload: WorkloadConfig,
    #[serde(flatten)]
    pub extra: Extra,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// TensorRT-LLM's batch waiting in words: each of its three settings'
    /// shapes, and nothing where it is off.
    #[test]
    fn batch_waiting_is_said_as_it_holds() {
        assert_eq!(batch_wait_words(0, 0.0), None);
        assert_eq!(batch_wait_words(20, 0.0).as_deref(), Some("prompts held beside decodes for 20 steps"));
        assert_eq!(
            batch_wait_words(20, 0.9).as_deref(),
            Some("prompts held beside decodes up to 20 steps, until the step reaches 0.9 of its tokens")
        );
        assert!(batch_wait_words(0, 0.9).unwrap().contains("no prompt held"));
    }

    /// The pools in words name their router where it is not least-loaded.
    #[test]
    fn pools_name_a_router_other_than_least_loaded() {
        let engine = |router: Option<&str>, pd: bool| {
            let pd = pd.then(|| {
                json!({"prefill": 2, "decode": 1, "kv_link": "nvlink", "kv_link_gbps": 3600.0,
                                     "kv_link_latency_us": 10.0})
            });
            serde_json::from_value::<EngineSettings>(json!({"tp": 1, "router": router, "pd": pd})).unwrap()
        };
        let words = |router| engine(router, true).pools_routed();
        assert_eq!(words(Some("prefix-aware")).as_deref(), Some("2 prefill + 1 decode instances (prefix-aware)"));
        assert_eq!(words(Some("least-loaded")).as_deref(), Some("2 prefill + 1 decode instances"));
        assert_eq!(words(None).as_deref(), Some("2 prefill + 1 decode instances"));
        assert_eq!(engine(Some("round-robin"), false).pools_routed(), None);
    }

    #[test]
    fn a_rate_is_a_number_or_inf_and_nothing_else() {
        let load: LoadConfig = serde_json::from_value(json!({"rate": "inf", "concurrency": 3})).unwrap();
        assert!(load.rate.unwrap().is_unbounded());
        assert_eq!(serde_json::to_value(&load).unwrap()["rate"], "inf");
        let load: LoadConfig = serde_json::from_value(json!({"rate": 2.5})).unwrap();
        assert_eq!(load.rate, Some(Rate(2.5)));
        let err = serde_json::from_value::<LoadConfig>(json!({"rate": "fast"})).unwrap_err().to_string();
        assert!(err.contains("not \"fast\""), "{err}");
    }

    #[test]
    fn nulls_and_absent_keys_read_alike_and_unknown_keys_are_kept() {
        let v = json!({
            "load": {"concurrency": 4, "requests": 8, "rate": null, "new_setting": [1, 2]},
            "label": "x",
            "later": {"a": 1},
        });
        let c: RunConfig = serde_json::from_value(v).unwrap();
        let load = c.load.as_ref().unwrap();
        assert_eq!((load.concurrency, load.requests, load.rate), (Some(4), Some(8), None));
        assert_eq!(load.extra["new_setting"], json!([1, 2]));
        assert_eq!(c.extra["later"], json!({"a": 1}));
        let back = serde_json::to_value(&c).unwrap();
        assert_eq!(back["later"], json!({"a": 1}));
        assert_eq!(back["load"]["new_setting"], json!([1, 2]));
        // The keys a closed loop has always written as null stay null.
        assert_eq!(back["load"]["sessions"], Value::Null);
        assert!(back["load"].as_object().unwrap().contains_key("sessions"));
        assert!(!back.as_object().unwrap().contains_key("client"));
    }
}
