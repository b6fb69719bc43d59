//! The per-request record: every timestamp of docs/metrics.md as an offset from the
//! run's origin, the token counts with their sources, and the outcome. The
//! runner writes these; everything else is computed from them.

pub use crate::doc::chunks::Chunks;
pub use crate::doc::chunks::{Channel, OutputChunk};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// One request, as the client saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RequestRecord {
    /// Position in the load plan (0-based, warm-up included); with sessions,
    /// the order the turns were sent in.
    pub id: u64,
    /// The run the record is of (the result's `run_id`), on records written
    /// to a records file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Warm-up requests are recorded but excluded from the measurement window.
    #[serde(default, skip_serializing_if = "is_false")]
    pub warmup: bool,
    /// When the load plan wanted the request sent.
    #[serde(rename = "scheduled_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub scheduled: Duration,
    /// When the request was handed to the connection.
    #[serde(rename = "sent_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub sent: Duration,
    /// First response byte (headers included).
    #[serde(rename = "first_byte_ns", with = "crate::util::serde_ns::option", default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub first_byte: Option<Duration>,
    /// Output-bearing chunks only, in arrival order, packed (see [`Chunks`]).
    #[serde(default)]
    pub chunks: Chunks,
    /// The first and last streamed payloads vLLM's `bench serve` (0.33)
    /// counts as output (an empty `content` without a `role` included): where
    /// it takes TTFT and a request's end, kept to give its figures in
    /// `compat.vllm`. OpenAI's streamed APIs only; absent where they are the
    /// first and last output chunks.
    #[serde(
        rename = "first_choice_ns",
        with = "crate::util::serde_ns::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub first_choice: Option<Duration>,
    #[serde(
        rename = "last_choice_ns",
        with = "crate::util::serde_ns::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub last_choice: Option<Duration>,
    /// The stream's close (`[DONE]`, usage chunk or end of body).
    #[serde(rename = "stream_end_ns", with = "crate::util::serde_ns::option", default)]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub stream_end: Option<Duration>,
    /// When the request finished for the client, whatever the outcome.
    #[serde(rename = "end_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub end: Duration,
    /// Input tokens and where the count came from.
    pub input_tokens: u64,
    pub input_tokens_source: CountSource,
    /// Output tokens (`n_out`) and where the count came from.
    pub output_tokens: u64,
    pub output_tokens_source: CountSource,
    /// Where the per-chunk counts `k_i` came from.
    pub chunk_tokens_source: ChunkTokenSource,
    /// Every count that was available, so disagreements can be reported.
    #[serde(default)]
    pub counts: TokenCounts,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
    /// The `Retry-After` a refused request came back with (429, 503), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<String>,
    /// The response's `Date` header, kept beside a `Retry-After` that is an
    /// HTTP date: the date is read against the server's clock, not this
    /// machine's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_date: Option<String>,
    /// Times the request was sent again because a pooled connection turned
    /// out dead before any byte of the response came.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The longest an output chunk's bytes had waited in the socket when the
    /// client read them (the read's time less the kernel's receive time):
    /// the client's own lateness on the receiving side, which read stamps
    /// carry into every time. Only where the client sees the kernel's
    /// receive times (Linux, goodput's own HTTP/1.1 client).
    #[serde(
        rename = "read_lag_max_ns",
        with = "crate::util::serde_ns::option",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Option<u64>"))]
    pub read_lag_max: Option<Duration>,
    /// Output chunks that came in the same read as the output chunk before
    /// them, so the gap between the two could not be seen: the client was a
    /// chunk behind, or the server wrote them together.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub shared_reads: u32,
    /// Output chunks whose time is only an upper bound: each came in one
    /// read with the output chunk after it, so it carries the stamp of
    /// those later bytes, and that read's bytes came over more than 2 ms
    /// after the client last found the socket empty: when within them the
    /// chunk came cannot be known (docs/metrics.md, what a stamp promises).
    /// A read whose bytes all came within 2 ms is no bound (the server
    /// wrote its chunks together), only `shared_reads`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bound_chunks: u32,
    /// TTFT is an upper bound: the first output chunk is one of
    /// `bound_chunks`, or the client took over 2 ms after `sent` to write
    /// the request (a fresh connection's opening aside).
    #[serde(default, skip_serializing_if = "is_false")]
    pub ttft_bound: bool,
    /// The client itself stalled (its own clock saw it stopped or starved
    /// past the threshold, result's `client_stalls`) between the request's
    /// scheduled time and its end: a stall before `sent` made the send late
    /// (client queue time, the client's fault, not the server's), and one
    /// after it may make the request's times late by as much as the stall,
    /// so they are upper bounds, not the server's.
    #[serde(default, skip_serializing_if = "is_false")]
    pub client_stalled: bool,
    /// Images the request carried (`--images`), and their encoded bytes
    /// (before base64).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub images: u32,
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub image_bytes: u64,
    /// The conversation this request is a turn of, when the load runs
    /// multi-turn sessions (`--turns`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionTurn>,
    /// The model the request asked for, when the run spread its requests
    /// over several (`--model a,b`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The client gave up on the request on purpose, as a user who closes
    /// the tab (`--cancel-rate`): its outcome is `cancelled`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub abandoned: bool,
    pub outcome: Outcome,
    /// The answer's scores against the dataset's reference(s) (`--score`),
    /// on a successful request whose entry has one.
    // Boxed: most runs score nothing, and inline the scores were 304 of a
    // record's 1,008 bytes, which `report` holds for every request of a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<Box<crate::quality::scoring::RequestQuality>>,
    /// A hash of the prompt as sent ([`crate::util::hash::text_hash`]), to pair a
    /// request with its copies (`--repeat`) and with another run's
    /// (`compare`) without keeping the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_hash: Option<String>,
    /// A hash of the answer's visible content, on a successful request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_hash: Option<String>,
    /// Which copy of its prompt the request is (0-based), when the run sent
    /// each prompt several times (`--repeat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// A 32-bit hash of each word of the answer, in order, when the run
    /// sent each prompt several times: what the consistency figures compare
    /// (docs/metrics.md) without the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_words: Option<Vec<u32>>,
    /// The prompt as sent, with `--keep-text` only (its text, or its
    /// messages as JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<String>,
    /// The answer's visible content, with `--keep-text` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_text: Option<String>,
    /// The dataset entry's reference(s), with `--keep-text` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<Vec<String>>,
}

/// Where a request sits in a multi-turn session: turn `turn` (1 for the
/// opening one) of the `turns` that session `id` planned. A session whose
/// turns did not all succeed ended early: a turn failed, or the run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SessionTurn {
    pub id: u64,
    pub turn: u32,
    pub turns: u32,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Where a token count came from, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// The server's `usage` block.
    Usage,
    /// The client's tokenizer.
    Tokenizer,
    /// The number of output-bearing chunks.
    Chunks,
    /// What the workload generator intended.
    Intended,
    /// Not known: a prompt of a dataset (no length intended), answered with
    /// no usage, and no `--tokenizer` to count it. The count is 0, which is
    /// no measurement: it adds nothing to the input totals.
    Unknown,
}

impl fmt::Display for CountSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CountSource::Usage => "usage",
            CountSource::Tokenizer => "tokenizer",
            CountSource::Chunks => "chunks",
            CountSource::Intended => "intended",
            CountSource::Unknown => "unknown",
        })
    }
}

/// Where the per-chunk token counts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChunkTokenSource {
    /// Cumulative `usage` on every chunk (vLLM's continuous usage stats).
    ContinuousUsage,
    /// The client tokenizer, each chunk counted in the context of the output
    /// before it; the counts sum to `n_out`.
    Tokenizer,
    /// The server's `n_out` shared out over the chunks in proportion to the
    /// client tokenizer's counts, which differed from it by a little (the
    /// end-of-sequence token, a special token): see [`chunk_counts`].
    Apportioned,
    /// `n_out` spread evenly over the chunks.
    Even,
    /// A whole body (`--no-stream`): its one chunk holds every token, and
    /// says nothing of how the server spaced them.
    WholeBody,
}

/// How far a tokenizer's count of an output may be from the server's and
/// still be the served model's tokenizer: 10%, or 2 tokens on short outputs.
/// Past it the tokenizer is another model's, and its per-chunk counts are
/// not used.
pub fn tokenizer_fits(usage: u64, tokenizer: u64) -> bool {
    usage.abs_diff(tokenizer) <= (usage / 10).max(2)
}

/// A request's per-chunk token counts from `n_out` and the client
/// tokenizer's in-context counts of its chunks: those counts when they sum
/// to `n_out`; `n_out` apportioned over them when they sum to a little more
/// or less ([`tokenizer_fits`]); `n_out` spread evenly when the tokenizer is
/// clearly not the model's.
///
/// ```
/// use goodput_core::{chunk_counts, ChunkTokenSource};
/// assert_eq!(chunk_counts(4, &[1, 2, 1]), (vec![1, 2, 1], ChunkTokenSource::Tokenizer));
/// assert_eq!(chunk_counts(5, &[1, 2, 1]), (vec![1, 3, 1], ChunkTokenSource::Apportioned));
/// assert_eq!(chunk_counts(40, &[5, 5, 5, 5]), (vec![10; 4], ChunkTokenSource::Even));
/// ```
pub fn chunk_counts(n_out: u64, counted: &[u32]) -> (Vec<u32>, ChunkTokenSource) {
    let total = crate::analysis::stats::total(counted.iter().map(|&k| k as u64));
    if total == n_out {
        (counted.to_vec(), ChunkTokenSource::Tokenizer)
    } else if total > 0 && tokenizer_fits(n_out, total) {
        (apportion(n_out, counted), ChunkTokenSource::Apportioned)
    } else {
        (spread_evenly(n_out, counted.len()), ChunkTokenSource::Even)
    }
}

/// Shares `n` out in proportion to `weights` by largest remainder: each
/// gets the floor of its share, and what is left goes one each to the
/// largest remainders (the later chunk first on ties: a surplus of usage
/// over the tokenizer's counts is most often the end-of-sequence token,
/// which comes with the last chunk, and the first chunk's count is TPOT's
/// divisor's, so a tie given to it had raised TPOT 4% on 30 tokens). Sums to `n` (but
/// for shares past `u32::MAX`, which are `u32::MAX`); an all-zero
/// `weights` gets `n` spread evenly.
///
/// ```
/// assert_eq!(goodput_core::apportion(7, &[1, 1, 1]), vec![2, 2, 3]);
/// assert_eq!(goodput_core::apportion(3, &[0, 5, 0]), vec![0, 3, 0]);
/// ```
pub fn apportion(n: u64, weights: &[u32]) -> Vec<u32> {
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    if total == 0 {
        return spread_evenly(n, weights.len());
    }
    let share = |w: u32| (n as u128 * w as u128 / total, n as u128 * w as u128 % total);
    let mut out: Vec<u32> = weights.iter().map(|&w| u32::try_from(share(w).0).unwrap_or(u32::MAX)).collect();
    let given = crate::analysis::stats::total(out.iter().map(|&k| k as u64));
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((share(weights[i]).1, i)));
    for &i in order.iter().take(usize::try_from(n.saturating_sub(given)).unwrap_or(usize::MAX)) {
        out[i] = out[i].saturating_add(1);
    }
    out
}

impl fmt::Display for ChunkTokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChunkTokenSource::ContinuousUsage => "continuous_usage",
            ChunkTokenSource::Tokenizer => "tokenizer",
            ChunkTokenSource::Apportioned => "apportioned",
            ChunkTokenSource::Even => "even",
            ChunkTokenSource::WholeBody => "whole_body",
        })
    }
}

/// Every token count the client could see for one request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct TokenCounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_prompt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_completion: Option<u64>,
    /// Prompt tokens the server served from its prefix cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_cached_prompt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_prompt: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_completion: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intended_prompt: Option<u64>,
    /// `max_tokens` as sent, when the request asked for a length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_completion: Option<u64>,
    /// Output-bearing chunks.
    #[serde(default)]
    pub chunks: u64,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failed {
        kind: FailureKind,
        message: String,
    },
    /// Stopped by the user (Ctrl-C), the end of the run, or the load's own
    /// cancellations (`--cancel-rate`) before it finished.
    Cancelled,
}

impl Outcome {
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Success)
    }

    pub fn failure_kind(&self) -> Option<FailureKind> {
        match self {
            Outcome::Failed { kind, .. } => Some(*kind),
            _ => None,
        }
    }
}

/// The kinds of failure goodput tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The connection could not be made or was refused.
    Connect,
    /// The server answered with a non-2xx status.
    HttpStatus,
    /// The per-request timeout ran out.
    Timeout,
    /// An `{"error": …}` event inside a 200 stream.
    MidStreamError,
    /// The stream ended before its API's end (`[DONE]` or a finish
    /// reason, `message_stop`, `"done": true`, …).
    TruncatedStream,
    /// The request succeeded but carried no output.
    EmptyOutput,
    /// The body could not be understood (malformed JSON, wrong shape, a
    /// content type that is neither a stream nor JSON, an empty or
    /// compressed body, a head whose framing cannot be read).
    InvalidResponse,
    /// HTTP 429: a rate limit (the server's or a gateway's) turned the
    /// request away; counted apart from server errors.
    RateLimited,
    /// The client ran out of something of its own (open files, memory,
    /// local ports): the server is not to blame.
    ClientResource,
}

impl FailureKind {
    pub const ALL: [FailureKind; 9] = [
        FailureKind::Connect,
        FailureKind::HttpStatus,
        FailureKind::RateLimited,
        FailureKind::ClientResource,
        FailureKind::Timeout,
        FailureKind::MidStreamError,
        FailureKind::TruncatedStream,
        FailureKind::EmptyOutput,
        FailureKind::InvalidResponse,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Connect => "connect",
            FailureKind::HttpStatus => "http_status",
            FailureKind::Timeout => "timeout",
            FailureKind::MidStreamError => "mid_stream_error",
            FailureKind::TruncatedStream => "truncated_stream",
            FailureKind::EmptyOutput => "empty_output",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::RateLimited => "rate_limited",
            FailureKind::ClientResource => "client_resource",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Spreads `n` tokens over `chunks` chunks as evenly as integers allow: chunk
/// `i` gets `⌊(i+1)·n/c⌋ − ⌊i·n/c⌋`, so the counts differ by at most one and
/// add up to `n` (unless a chunk's share passes `u32::MAX`, a count no
/// server means: it is `u32::MAX`).
///
/// ```
/// assert_eq!(goodput_core::spread_evenly(64, 32), vec![2; 32]);
/// assert_eq!(goodput_core::spread_evenly(5, 3), vec![1, 2, 2]);
/// assert_eq!(goodput_core::spread_evenly(3, 0), Vec::<u32>::new());
/// ```
pub fn spread_evenly(n: u64, chunks: usize) -> Vec<u32> {
    // In u128: (i + 1)·n overflows u64 for a count near its largest.
    let (n, c) = (n as u128, chunks as u128);
    (0..c).map(|i| u32::try_from((i + 1) * n / c - i * n / c).unwrap_or(u32::MAX)).collect()
}

/// The most tokens a request's prompt or output may count (2^30, about a
/// billion: a thousand times the longest context a model serves): a count
/// past it is a record edited or damaged (`u64::MAX` output tokens had been
/// reported as 3.19e18 tokens a second).
pub const MAX_REQUEST_TOKENS: u64 = 1 << 30;

impl RequestRecord {
    /// What in the record's times and counts no request has, if anything,
    /// naming the field: a first byte, an end or a chunk before the send, a
    /// send before its schedule, a chunk after the end, an end past the
    /// clock's [`crate::HORIZON`], or a token count past
    /// [`MAX_REQUEST_TOKENS`]. A file that says so was edited or damaged:
    /// an edited one had been read as a TTFT of 0, an E2E of 1,001,155 ms,
    /// a window of 584 years or 3.19e18 tokens a second.
    pub fn time_fault(&self) -> Option<String> {
        let ns = |d: Duration| d.as_nanos();
        if let Some(f) = self.first_byte.filter(|f| *f < self.sent) {
            return Some(format!("first_byte_ns {} came before its sent_ns {}", ns(f), ns(self.sent)));
        }
        if self.end < self.sent {
            return Some(format!("end_ns {} came before its sent_ns {}", ns(self.end), ns(self.sent)));
        }
        if self.scheduled > self.sent {
            return Some(format!("sent_ns {} came before its scheduled_ns {}", ns(self.sent), ns(self.scheduled)));
        }
        if self.end > crate::HORIZON {
            return Some(format!(
                "end_ns {} lies past the {}-year horizon of a run's clock",
                ns(self.end),
                crate::HORIZON.as_secs() / (365 * 24 * 3600)
            ));
        }
        if let Some((i, c)) = self.chunks.iter().enumerate().find(|(_, c)| c.t < self.sent || c.t > self.end) {
            let (rel, other, at) =
                if c.t < self.sent { ("before", "sent_ns", self.sent) } else { ("after", "end_ns", self.end) };
            return Some(format!("chunks[{i}].t_ns {} came {rel} its {other} {}", ns(c.t), ns(at)));
        }
        for (name, n) in [("input_tokens", self.input_tokens), ("output_tokens", self.output_tokens)] {
            if n > MAX_REQUEST_TOKENS {
                return Some(format!("{name} {n} is past the {MAX_REQUEST_TOKENS} tokens any request can hold"));
            }
        }
        None
    }

    /// A record with no response yet: the starting point the client fills in.
    pub fn new(id: u64, scheduled: Duration, sent: Duration) -> Self {
        RequestRecord {
            id,
            run_id: None,
            warmup: false,
            scheduled,
            sent,
            first_byte: None,
            chunks: Chunks::new(),
            first_choice: None,
            last_choice: None,
            stream_end: None,
            end: sent,
            input_tokens: 0,
            input_tokens_source: CountSource::Intended,
            output_tokens: 0,
            output_tokens_source: CountSource::Chunks,
            chunk_tokens_source: ChunkTokenSource::Even,
            counts: TokenCounts::default(),
            http_status: None,
            retry_after: None,
            retry_after_date: None,
            retries: 0,
            finish_reason: None,
            read_lag_max: None,
            shared_reads: 0,
            bound_chunks: 0,
            ttft_bound: false,
            client_stalled: false,
            images: 0,
            image_bytes: 0,
            abandoned: false,
            session: None,
            model: None,
            outcome: Outcome::Cancelled,
            quality: None,
            prompt_hash: None,
            output_hash: None,
            repeat: None,
            output_words: None,
            prompt_text: None,
            output_text: None,
            reference: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Times and counts no request has are named with their field.
    #[test]
    fn a_records_faults_name_the_field() {
        let ms = Duration::from_millis;
        let mut r = RequestRecord::new(7, ms(10), ms(20));
        r.first_byte = Some(ms(30));
        r.chunks.push(OutputChunk { t: ms(30), tokens: 1, channel: Channel::Content });
        r.end = ms(40);
        r.output_tokens = 1;
        assert_eq!(r.time_fault(), None);
        let fault = |edit: &dyn Fn(&mut RequestRecord)| {
            let mut e = r.clone();
            edit(&mut e);
            e.time_fault().unwrap_or_default()
        };
        assert_eq!(fault(&|e| e.scheduled = ms(25)), "sent_ns 20000000 came before its scheduled_ns 25000000");
        assert_eq!(fault(&|e| e.end = ms(15)), "end_ns 15000000 came before its sent_ns 20000000");
        assert!(fault(&|e| e.end = Duration::from_nanos(u64::MAX)).starts_with("end_ns 18446744073709551615 lies past"));
        let chunk = |t| {
            move |e: &mut RequestRecord| {
                e.chunks = Chunks::new();
                e.chunks.push(OutputChunk { t, tokens: 1, channel: Channel::Content });
            }
        };
        assert_eq!(fault(&chunk(ms(5))), "chunks[0].t_ns 5000000 came before its sent_ns 20000000");
        assert_eq!(fault(&chunk(ms(50))), "chunks[0].t_ns 50000000 came after its end_ns 40000000");
        assert!(fault(&|e| e.output_tokens = u64::MAX).starts_with("output_tokens 18446744073709551615 is past"));
        assert!(fault(&|e| e.input_tokens = MAX_REQUEST_TOKENS + 1).starts_with("input_tokens 1073741825 is past"));
    }

    #[test]
    fn spread_adds_up_and_differs_by_at_most_one() {
        for n in 0..50u64 {
            for c in 1..20usize {
                let s = spread_evenly(n, c);
                assert_eq!(s.iter().map(|&k| k as u64).sum::<u64>(), n);
                let (lo, hi) = (s.iter().min().unwrap(), s.iter().max().unwrap());
                assert!(hi - lo <= 1, "n={n} c={c} {s:?}");
            }
        }
    }

    #[test]
    fn record_round_trips_through_json_exactly() {
        let mut r = RequestRecord::new(7, Duration::from_nanos(1), Duration::from_nanos(123_456_789_123));
        r.first_byte = Some(Duration::from_nanos(123_556_789_124));
        r.chunks.push(OutputChunk { t: Duration::from_nanos(123_656_789_125), tokens: 2, channel: Channel::Reasoning });
        r.outcome = Outcome::Failed { kind: FailureKind::MidStreamError, message: "boom".into() };
        let text = serde_json::to_string(&r).unwrap();
        assert!(text.contains("\"sent_ns\":123456789123"), "{text}");
        assert!(text.contains("\"kind\":\"mid_stream_error\""), "{text}");
        let back: RequestRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    /// Probe 82: ten chunks of 3 words and usage 31 (an end-of-sequence
    /// token): the surplus had gone to the first chunk, whose count TPOT
    /// takes away (180/27 ms where 180/28 is right). It goes to the last.
    #[test]
    fn a_surplus_token_goes_to_the_last_chunk_on_ties() {
        let (k, source) = chunk_counts(31, &[3; 10]);
        assert_eq!(source, ChunkTokenSource::Apportioned);
        assert_eq!((k[0], k[9], k.iter().map(|&k| k as u64).sum::<u64>()), (3, 4, 31));
        // Remainders still decide before position.
        assert_eq!(apportion(5, &[1, 2, 1]), vec![1, 3, 1]);
    }
}
