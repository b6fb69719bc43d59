//! What goodput-load refuses before a run, as types a caller can match;
//! each message names the problem and the fix.

use goodput_core::util::thousands;
use std::path::PathBuf;

/// A `--tokenizer` file that cannot count tokens.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    #[error(
        "tokenizer file {} not found: pass the path of a local tokenizer.json (goodput never downloads one)",
        path.display()
    )]
    NotFound { path: PathBuf },
    /// Not a regular file, or larger than a tokenizer may be.
    #[error(transparent)]
    Input(#[from] goodput_core::util::input::InputError),
    #[error("cannot load tokenizer {}: {reason} (expected a Hugging Face tokenizer.json)", path.display())]
    Load { path: PathBuf, reason: String },
    /// It loads, but cannot turn plain text into tokens.
    #[error("tokenizer {}: {reason}", path.display())]
    Unusable { path: PathBuf, reason: Unusable },
}

/// Why a tokenizer that loads cannot count: it fails on, or gives no tokens
/// for, plain English (`probe`, its first 40 characters).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unusable {
    #[error("it cannot encode plain text ({0}): pass the served model's tokenizer.json")]
    CannotEncode(String),
    #[error(
        "it gives no tokens for plain English ('{probe}…'), so it can neither count answers nor build prompts: its \
         vocabulary is empty or lacks these characters; pass the served model's tokenizer.json"
    )]
    NoTokens { probe: String },
}

/// A request body that cannot be built for the API.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// serde_json could not write the body.
    #[error("{0}")]
    Encode(serde_json::Error),
}

/// A server's payload (an SSE event's data, an NDJSON line, a whole body)
/// that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("malformed JSON in response: {0}")]
    MalformedJson(serde_json::Error),
    /// Well-formed JSON with a field of a type or value the API does not
    /// give it (`"prompt_tokens": -5`, `5.0`, `"5"`): the field named.
    #[error("the server sent {field} as a value goodput cannot read ({error}): the API gives it otherwise")]
    UnexpectedValue { field: String, error: serde_json::Error },
}

/// What goodput's own HTTP/1.1 client could not do: set up, connect, or
/// read a body to its end.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("the URL {url} has no host")]
    NoHost { url: String },
    #[error(
        "kernel receive timestamps (--stamp kernel) are available on Linux only; leave --stamp at auto or give \
         --stamp read"
    )]
    KernelStampsOffLinux,
    #[error("cannot connect to {authority}: {error}")]
    Connect { authority: String, error: std::io::Error },
    #[error("cannot turn on receive timestamps on the socket: {0} (--stamp auto falls back to read stamps)")]
    Timestamps(std::io::Error),
    #[error("cannot register the connection to {authority}: {error}")]
    Register { authority: String, error: std::io::Error },
    #[error("the connection broke: {0}")]
    Broke(std::io::Error),
    #[error("the server closed the connection before the end of the body")]
    ClosedInBody,
    #[error(transparent)]
    Chunked(#[from] ChunkedError),
}

/// A chunked body that breaks the framing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkedError {
    #[error("a chunk-size line of the response is longer than 4 KiB")]
    LineTooLong,
    /// The size line, as sent.
    #[error("invalid chunk size '{0}' in the response")]
    BadSize(String),
    #[error("a chunk of the response does not end with CRLF")]
    NoCrlf,
    #[error("the trailer lines after the response's last chunk are longer than 64 KiB in all")]
    TrailersTooLarge,
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
    #[error(
        "the value of header '{name}' holds a control character, which no header may: give it in visible characters"
    )]
    Control { name: String },
    #[error(
        "the API key (--api-key or OPENAI_API_KEY) holds a control character or a line break, which no header may: \
         give the key alone (a file's trailing newline?)"
    )]
    Key,
}

/// A client that cannot be built from its settings.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid --url '{url}': {reason} (expected e.g. http://127.0.0.1:8000)")]
    Url { url: String, reason: String },
    #[error("invalid --url '{url}': no scheme (expected e.g. http://{host_port})")]
    NoScheme { url: String, host_port: String },
    #[error("invalid --url '{url}': the scheme must be http or https")]
    Scheme { url: String },
    #[error(
        "invalid --url '{url}': a fragment (#…) is never sent to a server; drop it, or write a # that belongs to \
         a query value as %23"
    )]
    Fragment { url: String },
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
    /// goodput's own HTTP/1.1 client refused the endpoint or the stamps.
    #[error(transparent)]
    Transport(#[from] HttpError),
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
    #[error(
        "--rate {rate} means one request every {gap} s: give at least {min} requests/s (one in 100 years)",
        rate = crate::schedule::shown(*.0),
        gap = crate::schedule::shown(1.0 / .0),
        min = crate::schedule::shown(crate::schedule::min_rate())
    )]
    RateTooLow(f64),
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
    #[error(
        "--rate inf sends every request at the start, so a warm-up by time (--warmup 30s) or a --ramp-up, whose \
         sends are warm-up, would take every request and leave none to measure: give the warm-up as a count \
         (--warmup 10), a finite --rate to ramp up, or -c N without --rate to bring users in one by one"
    )]
    InstantWarmupTime,
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
        "--shared-prefix-tokens {0}: a prompt is at most {max} tokens (2 Mi, beyond any model's context); give a \
         shorter prefix",
        max = crate::workload::MAX_TOKENS
    )]
    SharedPrefixTokens(u32),
    #[error(
        "--turns all plays each ShareGPT conversation's own turns; synthetic questions need a count \
         (--turns 3, or uniform:2..6)"
    )]
    TurnsAllNeedsConversations,
    #[error("--repeat sends single prompts again: drop --turns or --repeat")]
    RepeatAsSessions,
    #[error("--images puts images in single requests; multi-turn sessions with images are not built yet: drop --turns or --images")]
    ImagesAsSessions,
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
    #[error(
        "the dataset {dataset} names the image {image}, which cannot be read ({error}): image paths are taken relative \
         to the dataset's folder; fix the path or put the file there"
    )]
    DatasetImage { dataset: PathBuf, image: PathBuf, error: String },
    /// Not a file to read, or a line or array past its cap: its message
    /// (this error is cloned and compared, which an I/O error is not).
    #[error("{0}")]
    Input(String),
    #[error("dataset {} looks like a JSON array but does not parse: {error}", path.display())]
    DatasetArray { path: PathBuf, error: String },
    /// The JSON array is not ShareGPT conversations.
    #[error("dataset {}: {reason}", path.display())]
    ShareGpt { path: PathBuf, reason: ShareGptError },
    /// `column` is 1-based, 0 when serde_json names none.
    #[error(
        "dataset {} line {line}{}: not JSON ({error})",
        path.display(),
        if *column > 0 { format!(", column {column}") } else { String::new() }
    )]
    LineNotJson { path: PathBuf, line: usize, column: usize, error: String },
    /// A line that is not UTF-8 from its byte `at` (1-based) on.
    #[error(
        "dataset {} line {line}, byte {at}: 0x{byte:02X} is not UTF-8 text, and goodput reads a dataset as UTF-8 \
         (Latin-1 or Windows-1252 text reads so): convert it first (e.g. iconv -f latin1 -t utf-8 {} > {}.utf8)",
        path.display(),
        path.display(),
        path.display()
    )]
    LineNotUtf8 { path: PathBuf, line: usize, at: usize, byte: u8 },
    /// A JSONL line that is JSON but not an entry.
    #[error("dataset {} line {line}: {reason}", path.display())]
    Entry { path: PathBuf, line: usize, reason: EntryError },
    #[error(
        "dataset {} holds no usable entry (an empty prompt, or a conversation that asks no question, is skipped): \
         give prompts",
        path.display()
    )]
    Empty { path: PathBuf },
    /// An entry of a JSON array, or a Parquet row, that is not an entry.
    #[error("dataset {} {place}: {reason}", path.display())]
    Item { path: PathBuf, place: String, reason: EntryError },
    #[error("cannot read Parquet dataset {}: {error}", path.display())]
    Parquet { path: PathBuf, error: String },
    /// More entries than goodput holds ([`crate::workload::MAX_ENTRIES`]).
    #[error(
        "dataset {} holds more than {} entries, the most goodput holds of a dataset: give a sample of it, e.g. \
         `{}` (each request draws from all the entries read)",
        path.display(),
        thousands(*cap as u64),
        sample.replace("FILE", &path.display().to_string())
    )]
    TooManyEntries { path: PathBuf, cap: usize, sample: &'static str },
    /// The memory for more entries could not be had.
    #[error(
        "dataset {}: the process ran out of memory holding its first {} entries (the machine's available memory, \
         or ulimit -v): give a sample of it, e.g. `{}`, or free memory",
        path.display(),
        thousands(*held as u64),
        sample.replace("FILE", &path.display().to_string())
    )]
    DatasetMemory { path: PathBuf, held: usize, sample: &'static str },
    /// A JSON array's entry past [`goodput_core::util::input::LINE_CAP`],
    /// as a JSONL line past it is refused.
    #[error(
        "dataset {} {place} is longer than {} (the longest entry goodput reads of a dataset): is it the right file?",
        path.display(),
        goodput_core::util::input::size(*cap as u64)
    )]
    EntryTooLong { path: PathBuf, place: String, cap: usize },
    /// JSON Lines past [`crate::workload::MAX_DATASET_BYTES`].
    #[error(
        "dataset {} is larger than {} (the most goodput reads of a dataset, its entries held in memory): give a \
         sample of it, e.g. `shuf -n 1000000 {} > sample.jsonl`",
        path.display(),
        goodput_core::util::input::size(*cap),
        path.display()
    )]
    DatasetTooLarge { path: PathBuf, cap: u64 },
}

impl From<goodput_core::util::input::InputError> for WorkloadError {
    fn from(e: goodput_core::util::input::InputError) -> Self {
        WorkloadError::Input(e.to_string())
    }
}

/// A JSON array that is not ShareGPT conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ShareGptError {
    #[error("expected a JSON array")]
    NotArray,
    #[error("no entry with \"conversations\" holding a prompt and a reply (ShareGPT format)")]
    NoConversation,
}

/// A `--trace` that cannot be replayed.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("--trace-speed must be a positive number, not {0}")]
    Speed(f64),
    /// Not a file to read, or a line past the cap.
    #[error(transparent)]
    Read(#[from] goodput_core::util::input::InputError),
    #[error("{}: {fault}", path.display())]
    Content { path: PathBuf, fault: TraceFault },
}

/// What is wrong in a trace's text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceFault {
    #[error(
        "line {line} {reason}; each line is {{\"timestamp\": SECONDS, \"input_tokens\": N, \"output_tokens\": N}}, \
         optionally with \"prefix_id\" and \"prefix_tokens\""
    )]
    Line { line: usize, reason: TraceLine },
    /// A line of a public trace format: what is wrong, after "line N".
    #[error("line {line} of this {format} trace {reason}")]
    Public { line: usize, format: &'static str, reason: String },
    #[error(
        "its first line '{first}' is no trace format goodput reads: give JSONL lines of {{\"timestamp\", \"input_tokens\", \
         \"output_tokens\"}} (goodput's), of Mooncake's {{\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}}, \
         or a CSV with the header of Azure's (TIMESTAMP,ContextTokens,GeneratedTokens) or BurstGPT's \
         (Timestamp,Model,Request tokens,Response tokens,…); --trace-format names one"
    )]
    Unknown { first: String },
    /// No request; `skipped` rows were read and left out (BurstGPT's of 0
    /// response tokens, its failures).
    #[error(
        "the trace has no requests{}",
        if *skipped > 0 {
            format!(
                ": its {skipped} row(s) were all skipped, each with 0 Response tokens (BurstGPT's mark of a failed \
                 request, which asked for nothing a replay can send)"
            )
        } else {
            String::new()
        }
    )]
    Empty { skipped: u64 },
    #[error(
        "the trace's last line comes {} s after its first (at this --trace-speed): more than 100 years, longer \
         than any run; check its timestamps are seconds, or give a higher --trace-speed",
        crate::schedule::shown(*.0)
    )]
    Span(f64),
    /// More requests than goodput holds ([`crate::trace::MAX_REQUESTS`]).
    #[error(
        "the trace has more than {} requests, the most goodput replays: give a part of it, e.g. its first million \
         lines (`head -n 1000001 FILE > part`, the header line and a million rows for a CSV)",
        thousands(*cap as u64)
    )]
    TooMany { cap: usize },
    /// The memory for more requests could not be had.
    #[error(
        "the process ran out of memory holding the trace's first {} requests (the machine's available memory, or \
         ulimit -v): give a part of it, e.g. `head -n 1000001 FILE > part`, or free memory",
        thousands(*held as u64)
    )]
    OutOfMemory { held: usize },
}

/// What is wrong with one line of a trace (the message follows "line N").
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceLine {
    /// serde_json's words, and the column they name (1-based; 0 for none).
    #[error("is not a trace entry ({}{error})", if *column > 0 { format!("column {column}: ") } else { String::new() })]
    NotEntry { column: usize, error: String },
    /// The fields named are Mooncake's (its `hash_ids` left out, which
    /// `--trace-format auto` tells it by).
    #[error(
        "has Mooncake's fields ({0}): give --trace-format mooncake (its timestamps in milliseconds), or goodput's \
         fields"
    )]
    MooncakeFields(String),
    #[error("has a timestamp of {0}: it must be a number of seconds ≥ 0")]
    Timestamp(f64),
    #[error("asks for 0 tokens: input_tokens and output_tokens must be at least 1")]
    NoTokens,
    #[error("has prefix_tokens {prefix}: it must be at least 1 and less than input_tokens ({input})")]
    PrefixTokens { prefix: u32, input: u32 },
    #[error("gives only one of prefix_id and prefix_tokens: give both or neither")]
    HalfPrefix,
    /// A `prefix_id` that is not a whole number ≥ 0 (a string, a fraction).
    #[error("has prefix_id {0}: it must be a whole number ≥ 0 (e.g. 7), not a string or a fraction")]
    PrefixId(String),
    #[error("asks for {0} tokens: a prompt or answer is at most {max} tokens (2 Mi, beyond any model's context)", max = crate::workload::MAX_TOKENS)]
    TooLong(u32),
}

/// A dataset's JSONL line that is JSON but not an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    /// The value read, as JSON (cut to 40 characters).
    #[error(
        "\"max_tokens\" is {0}: it must be a whole number from 1 to {max} (2 Mi, beyond any model's context)",
        max = crate::workload::MAX_TOKENS
    )]
    MaxTokens(String),
    #[error(
        "\"{column}\" must be an image or a list of them: a file path, a data URL (data:image/png;base64,...), or \
         an object with \"path\" or base64 \"bytes\" (the Hugging Face Image feature)"
    )]
    ImageColumn { column: String },
    #[error(
        "\"{column}\" names an image by URL ({url}), and goodput fetches nothing a dataset names: download the \
         images and name the files (relative to the dataset's folder), or give data: URLs"
    )]
    ImageUrl { column: String, url: String },
    #[error("\"prompt\" must be a string")]
    PromptNotText,
    #[error("\"messages\" must be an array")]
    MessagesNotArray,
    #[error("\"messages\" is empty")]
    NoMessages,
    #[error(
        "an entry needs a prompt column: \"prompt\", \"text\", \"instruction\" or \"question\" (a string), \
         \"messages\" (OpenAI chat messages), \"conversations\" (ShareGPT turns of from/value) or \"conversation\" \
         (LMSYS-Chat and WildChat turns of role/content); its columns are {found}: name one with --dataset-column"
    )]
    NoPrompt { found: String },
    /// A prompt column that is there, but `null`.
    #[error(
        "\"{column}\" is null: it must be {}",
        match column.as_str() {
            "messages" => "an array of chat messages (role/content)",
            "conversations" | "conversation" => "a list of chat turns (role/content or from/value)",
            "prompt" | "text" | "instruction" | "question" => "a string",
            _ => "text or a list of chat turns (role/content or from/value)",
        }
    )]
    NullColumn { column: String },
    #[error("has no column \"{column}\" (--dataset-column); its columns are {found}")]
    NoColumn { column: String, found: String },
    #[error("\"{column}\" is neither text nor a list of chat turns (role/content or from/value)")]
    ColumnType { column: String },
    #[error("is not a JSON object of columns")]
    NotObject,
    /// `key` is `reference` or `answer`.
    #[error("\"{key}\" must be a string or a list of strings")]
    ReferenceType { key: &'static str },
    #[error("\"{key}\" is an empty list: give at least one reference, or leave it out")]
    NoReference { key: &'static str },
    #[error(
        "\"{key}\" is an empty or blank string{list}: it scores 0 against every answer; give at least one reference, or \
         leave it out"
    )]
    BlankReference { key: &'static str, list: &'static str },
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
