//! What goodput-load refuses before a run, as types a caller can match;
//! each message names the problem and the fix.

use std::path::PathBuf;

/// A `--tokenizer` file that cannot count tokens.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error(
        "tokenizer file {} not found: pass the path of a local tokenizer.json (goodput never downloads one)",
        path.display()
    )]
    NotFound { path: PathBuf },
    #[error("cannot load tokenizer {}: {reason} (expected a Hugging Face tokenizer.json)", path.display())]
    Load { path: PathBuf, reason: String },
    /// It loads, but cannot turn plain text into tokens.
    #[error("tokenizer {}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: String },
}

/// A request header goodput will not send.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("'{name}' is not a header name: use letters, digits and - (e.g. --header 'X-Team: infra')")]
    Name { name: String },
    #[error("the value of header '{name}' holds a line break or NUL: give it on one line")]
    LineBreak { name: String },
    #[error("--header '{name}' is goodput's HTTP layer's to set (it frames every request itself): leave it out")]
    Owned { name: String },
}

/// A client that cannot be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid --url '{url}': {reason} (expected e.g. http://127.0.0.1:8000)")]
    Url { url: String, reason: String },
    #[error("invalid --url '{url}': the scheme must be http or https")]
    Scheme { url: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
    /// goodput's own HTTP/1.1 client refused the endpoint or the stamps.
    #[error("{0}")]
    Transport(String),
    #[error(
        "--stamp kernel needs goodput's own HTTP/1.1 client: an http:// URL reached directly (no proxy) and \
         --transport auto"
    )]
    KernelStamps,
    #[error(transparent)]
    Header(#[from] HeaderError),
}

/// An arrival schedule that cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    #[error("unknown arrival process '{0}': use poisson, gamma or constant")]
    UnknownArrival(String),
    #[error("--rate must be a positive number of requests per second, not {0}")]
    Rate(f64),
    #[error("--burstiness must be a positive number, not {0}")]
    Burstiness(f64),
    /// The gap distribution refused its parameters (rand_distr's words).
    #[error("{0}")]
    Distribution(String),
}

/// A load plan that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("the run has no end: give --requests N and/or --duration D")]
    NoEnd,
    #[error(
        "users that change over the run (stages by concurrency) need a closed loop of one process without a ramp-up"
    )]
    UserSteps,
    #[error("--trace brings its own send times: drop --rate")]
    TraceAndRate,
    #[error("--trace replays single requests: drop --turns")]
    TraceAndTurns,
    #[error("--trace brings its own send times: drop --ramp-up")]
    TraceAndRampUp,
    #[error("--requests must be at least 1")]
    NoRequests,
    #[error("--concurrency must be at least 1")]
    NoConcurrency,
    #[error("give --concurrency N (closed loop) and/or --rate R (open loop)")]
    NoLoop,
    #[error(
        "--shard {index}/{count}: the index counts from 0 and stays below the number of shards (0/{count} … {last}/{count})",
        last = count.saturating_sub(1)
    )]
    ShardIndex { index: u32, count: u32 },
    #[error(
        "--concurrency {concurrency} cannot be shared by {shards} shards, each of which needs a user at least: give \
         -c {shards} or more, or fewer shards"
    )]
    ShardWithoutUser { concurrency: usize, shards: u32 },
}

/// A distribution written on the command line (`--input-tokens`,
/// `--turns`, `--think-time`) that does not read: `what` it was meant to
/// be, why not, and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} '{spec}': {why}; expected {expected}")]
pub struct SpecError {
    pub what: &'static str,
    pub spec: String,
    pub why: String,
    pub expected: &'static str,
}

/// A workload that cannot give what the run asks of it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    #[error("--shared-prefix-ratio must be between 0 and 1, not {0}")]
    SharedPrefixRatio(f64),
    #[error("--shared-prefixes must be at least 1")]
    SharedPrefixes,
    #[error(
        "--turns all plays each ShareGPT conversation's own turns; synthetic questions need a count \
         (--turns 3, or uniform:2..6)"
    )]
    TurnsAllNeedsConversations,
    #[error("--repeat sends single prompts again: drop --turns or --repeat")]
    RepeatAsSessions,
    #[error(
        "a JSONL entry of chat messages is one request; multi-turn sessions from a dataset need ShareGPT \
         conversations (or prompts as {{\"prompt\": …}})"
    )]
    MessagesAsSession,
    #[error("the conversation has no more questions")]
    NoMoreQuestions,
    #[error("--trace replays single requests: drop --turns")]
    TraceAsSessions,
    #[error(
        "the dataset holds no conversation of more than one question: --turns needs ShareGPT conversations \
         with several human turns, or synthetic questions (drop --dataset)"
    )]
    NoConversations,
    #[error("cannot read dataset {}: {error}", path.display())]
    DatasetRead { path: PathBuf, error: String },
    #[error("dataset {} looks like a JSON array but does not parse: {error}", path.display())]
    DatasetArray { path: PathBuf, error: String },
    /// The JSON array is not ShareGPT conversations.
    #[error("dataset {}: {reason}", path.display())]
    ShareGpt { path: PathBuf, reason: &'static str },
    #[error("dataset {} line {line}: not JSON ({error})", path.display())]
    LineNotJson { path: PathBuf, line: usize, error: String },
    /// A JSONL line that is JSON but not an entry.
    #[error("dataset {} line {line}: {reason}", path.display())]
    Entry { path: PathBuf, line: usize, reason: String },
    #[error("dataset {} holds no usable entry", path.display())]
    Empty { path: PathBuf },
}

/// Why a run did not start.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Workload(#[from] WorkloadError),
}
