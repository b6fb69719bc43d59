//! The pure reading of one response: bytes as they arrived (SSE, NDJSON or
//! a whole body, of any API), each read with its stamp, into output chunks,
//! counts and a failure if there was one. No socket and no clock, so tests
//! feed it every split of a stream; [`crate::client::Client`] adds those.

use crate::http1::ReadStamp;
use crate::ndjson::LineReader;
use crate::protocol::{error_message, parse_for_into, Api, ChunkInfo, ChunkMemo, PromptBody, Usage};
use crate::sse::SseReader;
use crate::tokenizer::TokenCounter;
use goodput_core::util::hash::{text_hash, Fnv1a64};
use goodput_core::{
    chunk_counts, spread_evenly, ChunkTokenSource, Chunks, CountSource, FailureKind, Outcome, OutputChunk,
    RequestRecord,
};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// How far a time may be late and still be taken as the time itself. A
/// read carries one stamp, the receive time of its last segment (the
/// kernel merges a segment into the unread one before it and keeps the
/// later time), so an output chunk read together with a later one came
/// somewhere between the client's last look at the socket (the last read
/// that found it empty, or the request's write: `ReadStamp::since`) and
/// that stamp. When the two are more than this apart, the chunk's time is
/// only an upper bound (`RequestRecord::bound_chunks`): the server may
/// have written the chunks together, or the client may have fallen
/// behind, and nothing the client sees tells the two apart. Not the read's
/// lag: a client starved of CPU is woken by the very bytes that arrive, so
/// a read whose first chunk waited 8 ms still showed a lag under 2.5 ms.
pub const LATE_READ: Duration = Duration::from_millis(2);

/// The most output chunks [`ResponseReader::expecting`] makes room for
/// ahead: past it the list grows as chunks come.
const RESERVE_CAP: usize = 4096;

/// The most output chunks a response may bring when the request named no
/// `max_tokens` (about 20 MB of them kept): a server streaming without end
/// had filled the client's memory until it aborted, and the run was lost.
const MOST_CHUNKS: usize = 4_000_000;

/// The most tokens a usage count may give a request (u32's most, as the
/// other token counts): past it the count is no server's honest one.
const MOST_USAGE_TOKENS: u64 = u32::MAX as u64;

/// How many output chunks a [`ChunkList`] holds in itself.
const STAGED: usize = 8;

/// The output chunks read so far: the latest few in the reader itself, the
/// others packed ([`Chunks`], about 5 bytes a chunk where an
/// [`OutputChunk`] takes 24) in a list they are moved to [`STAGED`] at a
/// time. A stream reader thread reaches for the reader at every chunk
/// anyway; the list is one more place in memory, which each chunk of each
/// stream would otherwise write to (see docs/measurement.md).
#[derive(Debug)]
struct ChunkList {
    list: Chunks,
    staged: [OutputChunk; STAGED],
    n_staged: usize,
    /// The chunks made room for ([`ResponseReader::expecting`]).
    room: usize,
}

impl Default for ChunkList {
    fn default() -> Self {
        let blank = OutputChunk { t: Duration::ZERO, tokens: 0, channel: goodput_core::Channel::Content };
        ChunkList { list: Chunks::new(), staged: [blank; STAGED], n_staged: 0, room: 0 }
    }
}

impl ChunkList {
    fn push(&mut self, c: OutputChunk) {
        if self.n_staged == STAGED {
            self.move_staged();
        }
        self.staged[self.n_staged] = c;
        self.n_staged += 1;
    }

    /// Moves the chunks held in the reader to the list.
    fn move_staged(&mut self) {
        for &c in &self.staged[..self.n_staged] {
            self.list.push(c);
        }
        self.n_staged = 0;
    }

    fn len(&self) -> usize {
        self.list.len() + self.n_staged
    }

    fn reserve(&mut self, n: usize) {
        self.list.reserve_exact(n);
        self.room = self.room.max(n);
    }

    fn room(&self) -> usize {
        self.room
    }

    fn into_chunks(mut self) -> Chunks {
        self.move_staged();
        self.list
    }
}

/// What a [`ResponseReader`] keeps of the answer's visible content.
#[derive(Debug, Default)]
enum Reply {
    #[default]
    Nothing,
    Text(String),
    /// The hash alone ([`goodput_core::util::hash::text_hash`]'s), fed a
    /// chunk at a time: the text's buffer is one more place in memory that
    /// every chunk of every stream would write to, and a client reading
    /// hundreds of streams pays for each such place (see
    /// docs/measurement.md).
    Hash(Fnv1a64),
}

/// Reads one response, stream or whole body, into output chunks, counts and
/// a failure if there was one. Times are offsets on the run's clock.
#[derive(Debug, Default)]
pub struct ResponseReader {
    /// Which protocol the bytes speak.
    api: Api,
    sse: SseReader,
    /// NDJSON framing (Ollama), in place of SSE.
    lines: LineReader,
    chunks: ChunkList,
    /// Each output chunk's text, kept only when a tokenizer will count it
    /// (per chunk, and joined for the whole output).
    chunk_texts: Option<Vec<String>>,
    /// Cumulative `usage.completion_tokens` seen on each output chunk, while
    /// every chunk so far carried one (`cumulative_gap`: one did not, and
    /// the counts are dropped).
    cumulative: Vec<u64>,
    cumulative_gap: bool,
    /// The most `usage.completion_tokens` any payload said so far, and
    /// whether a later one said fewer (running counts that went down, or a
    /// second final usage below the first): the running counts are then not
    /// taken for the chunks' counts.
    usage_high: Option<u64>,
    usage_fell: Option<(u64, u64)>,
    /// What the last payload carried, parsed in place: its text's buffer
    /// serves the next payload, one allocation for a response rather than
    /// one a chunk.
    info: ChunkInfo,
    /// The stream's last plain chunk, less its string: a payload of the
    /// same bytes around another string is read without parsing.
    memo: ChunkMemo,
    usage: Option<Usage>,
    done: bool,
    finish_reason: Option<String>,
    failure: Option<(FailureKind, String)>,
    stream_end: Option<Duration>,
    /// The read being parsed, and the one that brought the last output chunk.
    read: ReadStamp,
    last_chunk_read: Option<u64>,
    read_lag_max: Option<Duration>,
    shared_reads: u32,
    /// Output chunks that shared a late read with the one after them (see
    /// `RequestRecord::bound_chunks`), and whether the first did.
    bound_chunks: u32,
    ttft_bound: bool,
    /// The first and last payloads with a choice (see
    /// `RequestRecord::first_choice`).
    choices: Option<(Duration, Duration)>,
    /// Parsing what was left unfinished when the stream closed.
    at_end: bool,
    /// The most bytes held for one line, event or body (0: no cap).
    limit: usize,
    /// The bytes of the unended line or event this reader holds, as counted
    /// in the process's total ([`HELD`]).
    held: HeldBytes,
    /// The request asked for a stream: a stream read as one body came
    /// labelled application/json, not against a `--no-stream`.
    stream_asked: bool,
    /// What is kept of the answer's visible content: the text (a
    /// conversation carries it into its next turn, a scorer reads it), or
    /// only its hash, or nothing.
    reply: Reply,
    /// Some byte of the body came (an empty body is no stream cut short).
    any_body: bool,
    /// The vectors or scores a pooling answer carried (`--api embeddings`,
    /// `rerank`).
    pooled: Option<usize>,
    /// The `max_tokens` the request asked for, when it named one: a
    /// response past twice as many output chunks (and 1,024 more) does not
    /// honour it, and is failed rather than kept growing.
    max_tokens: Option<u32>,
    /// Some payload was read as the API's (output, counts, a finish reason
    /// or its end; `[DONE]` for OpenAI's): until then, the first few that
    /// were not are kept in `unread`, to tell which API they are of when
    /// nothing came of them (a server of another API's dialect).
    recognised: bool,
    unread: Vec<String>,
    unread_count: u32,
    /// A `[DONE]` came, which only OpenAI's APIs end a stream with.
    openai_done: bool,
    /// The answer was read as one body ([`ResponseReader::whole_body`]).
    whole: bool,
}

/// How many unrecognised payloads are kept, and the longest kept.
const UNREAD_KEPT: usize = 4;
const UNREAD_BYTES: usize = 4096;

/// The APIs a payload nothing came of is tried as, in the order named.
const TEXT_APIS: [Api; 7] =
    [Api::Chat, Api::Completions, Api::Messages, Api::OllamaChat, Api::OllamaGenerate, Api::Tgi, Api::LlamaCpp];

impl ResponseReader {
    pub fn new(keep_chunk_texts: bool) -> Self {
        ResponseReader { chunk_texts: keep_chunk_texts.then(Vec::new), ..Default::default() }
    }

    /// Room for `max_tokens` output chunks (at most [`RESERVE_CAP`]), so a
    /// response's chunks are kept without growing their list as they come.
    pub fn expecting(mut self, max_tokens: Option<u32>) -> Self {
        self.max_tokens = max_tokens;
        let n = max_tokens.map_or(0, |n| (n as usize).saturating_add(1).min(RESERVE_CAP));
        self.chunks.reserve(n);
        self.reserve_reply();
        self
    }

    /// Room in the kept reply for the chunks made room for (a few bytes a
    /// token), whichever of [`ResponseReader::expecting`] and
    /// [`ResponseReader::keeping_reply`] came first.
    fn reserve_reply(&mut self) {
        if let Reply::Text(reply) = &mut self.reply {
            reply.reserve(self.chunks.room().saturating_mul(4));
        }
    }

    /// Reads `api`'s responses (OpenAI's chat, by default).
    pub fn for_api(self, api: Api) -> Self {
        ResponseReader { api, ..self }
    }

    /// Reads the answers of requests that asked for a stream (`stream`):
    /// what a message says of an SSE stream where one body was due.
    pub fn streamed(self, stream: bool) -> Self {
        ResponseReader { stream_asked: stream, ..self }
    }

    /// Fails the response, as `invalid_response`, once a line, an event or
    /// the body it holds passes `limit` bytes.
    pub fn limited(self, limit: usize) -> Self {
        ResponseReader { limit, ..self }
    }

    /// Fails the response, dropping what was held, when the bytes held for
    /// the line or event being read passed the cap, or when the unended
    /// lines of every stream of the process together passed its budget
    /// ([`buffer_budget`]) and this one's holds more than a little of them.
    fn check_limit(&mut self) {
        let held = if self.api.ndjson() { self.lines.pending() } else { self.sse.pending() };
        let total = self.held.set(held);
        let message = if self.limit != 0 && held > self.limit {
            format!(
                "the server sent a line or event of more than {} bytes without ending it (--max-buffer raises the cap)",
                self.limit
            )
        } else if let Some(m) = over_budget(held, total, self.limit) {
            m
        } else {
            return;
        };
        self.lines = LineReader::default();
        self.sse = SseReader::default();
        self.held.set(0);
        self.failure = Some((FailureKind::InvalidResponse, message));
    }

    /// Also keeps the answer's visible content, for [`ResponseReader::take_reply`].
    pub fn keeping_reply(mut self) -> Self {
        self.reply = Reply::Text(String::new());
        self.reserve_reply();
        self
    }

    /// Keeps only the hash of the answer's visible content, for
    /// [`ResponseReader::reply_hash`], and not the content.
    pub fn hashing_reply(mut self) -> Self {
        self.reply = Reply::Hash(Fnv1a64::default());
        self
    }

    /// The answer's visible content, when kept.
    pub fn take_reply(&mut self) -> Option<String> {
        match std::mem::take(&mut self.reply) {
            Reply::Text(text) => Some(text),
            kept => {
                self.reply = kept;
                None
            }
        }
    }

    /// The hash of the answer's visible content ([`text_hash`]'s), when
    /// kept or hashed (and not yet taken).
    pub fn reply_hash(&self) -> Option<String> {
        match &self.reply {
            Reply::Nothing => None,
            Reply::Text(text) => Some(text_hash(text)),
            Reply::Hash(h) => Some(h.hex()),
        }
    }

    /// The response failed as bytes that are not the API's (malformed, or
    /// past the cap): what follows them is nothing to wait for.
    pub fn unreadable(&self) -> bool {
        matches!(self.failure, Some((FailureKind::InvalidResponse, _)))
    }

    /// True once the stream said all it will say (`[DONE]`, its API's last
    /// event, or an error).
    /// The most output chunks this response may bring ([`MOST_CHUNKS`], or
    /// twice `max_tokens` and 1,024 more where the request named it).
    fn most_chunks(&self) -> usize {
        self.max_tokens.map_or(MOST_CHUNKS, |m| (m as usize).saturating_mul(2).saturating_add(1024).min(MOST_CHUNKS))
    }

    pub fn finished(&self) -> bool {
        self.done || self.failure.is_some()
    }

    /// Feeds bytes of a stream (SSE, or NDJSON for Ollama) that `read` brought.
    pub fn feed(&mut self, bytes: &[u8], read: ReadStamp) {
        if self.finished() {
            return;
        }
        self.read = read;
        self.any_body |= !bytes.is_empty();
        let t = read.t;
        if self.api.ndjson() {
            let mut lines = std::mem::take(&mut self.lines);
            lines.feed(bytes, &mut |line| self.data(line, t));
            self.lines = lines;
            self.check_limit();
            return;
        }
        let mut sse = std::mem::take(&mut self.sse);
        sse.feed_each(bytes, &mut |event, data| self.event(event, data, t));
        self.sse = sse;
        self.check_limit();
    }

    /// End of the body at `t`.
    pub fn end_of_stream(&mut self, t: Duration) {
        self.at_end = true;
        if self.api.ndjson() {
            let mut lines = std::mem::take(&mut self.lines);
            lines.finish(&mut |line| self.data(line, t));
            self.stream_end.get_or_insert(t);
            return;
        }
        let mut sse = std::mem::take(&mut self.sse);
        sse.finish_each(&mut |event, data| self.event(event, data, t));
        self.sse = sse;
        self.stream_end.get_or_insert(t);
    }

    /// A whole non-streamed JSON body read at `t`.
    pub fn whole_body(&mut self, body: &[u8], t: Duration) {
        if self.limit > 0 && body.len() > self.limit {
            self.failure = Some((
                FailureKind::InvalidResponse,
                format!("the response body passed the cap of {} bytes (--max-buffer raises it)", self.limit),
            ));
            self.stream_end = Some(t);
            return;
        }
        if body.is_empty() {
            self.failure = Some((FailureKind::InvalidResponse, EMPTY_BODY.into()));
            self.stream_end = Some(t);
            return;
        }
        // A byte order mark before the JSON is no part of it (RFC 8259 lets a reader drop it).
        let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
        let text = String::from_utf8_lossy(body);
        self.data(&text, t);
        if self.unreadable() && looks_like_sse(&text) {
            // serde's "expected value at line 1 column 1" had said nothing of what came.
            let start: String = text.trim_start().chars().take(100).collect();
            let why = if self.stream_asked {
                "the server labels its stream application/json, where text/event-stream was due (the server's to fix)"
            } else if self.api.pools() {
                "the server streams an answer its API gives whole (the server's to fix)"
            } else {
                "the server streams though --no-stream asked it not to (drop --no-stream), or it labels its stream \
                 application/json (the server's to fix)"
            };
            self.failure = Some((
                FailureKind::InvalidResponse,
                format!(
                    "the response body is an SSE event stream (it starts with `{}:`), where one JSON body was due: \
                     {why}; the body starts \"{}\"",
                    text.trim_start().split(':').next().unwrap_or_default(),
                    start.escape_debug()
                ),
            ));
        }
        // One body is not a stream: it has no first and last payload.
        self.choices = None;
        self.whole = true;
        self.done = true;
        self.stream_end = Some(t);
    }

    /// A whole body left unread at `t`, once the process's budget for
    /// answers was passed ([`BodyHold`]).
    pub fn over_budget(&mut self, message: String, t: Duration) {
        self.failure = Some((FailureKind::InvalidResponse, message));
        self.stream_end = Some(t);
    }

    /// The connection broke while reading.
    pub fn broken(&mut self, message: String) {
        if self.failure.is_none() && !self.done {
            self.failure = Some((FailureKind::TruncatedStream, message));
        }
    }

    fn event(&mut self, event: Option<&str>, data: &str, t: Duration) {
        if self.finished() {
            return;
        }
        if event == Some("error") {
            let msg = serde_json::from_str(data)
                .map(|v: serde_json::Value| error_message(v.get("error").unwrap_or(&v)))
                .unwrap_or_else(|_| data.to_owned());
            self.failure = Some((FailureKind::MidStreamError, msg));
            self.stream_end = Some(t);
            return;
        }
        if is_done(data) {
            self.done = true;
            self.stream_end = Some(t);
            if matches!(self.api, Api::Chat | Api::Completions) {
                self.recognised = true;
            } else {
                self.openai_done = true;
            }
            return;
        }
        self.data(data, t);
    }

    fn data(&mut self, data: &str, t: Duration) {
        if self.finished() {
            return;
        }
        let most = self.most_chunks();
        let info = &mut self.info;
        match parse_for_into(self.api, data, info, &mut self.memo) {
            Ok(()) => {}
            // What was left when the stream closed, unparseable: the stream
            // was cut inside it, not sent malformed.
            Err(e @ crate::error::ProtocolError::MalformedJson(_)) if self.at_end => {
                self.failure = Some((FailureKind::TruncatedStream, format!("the stream ended inside a payload ({e})")));
                return;
            }
            Err(e) => {
                self.failure = Some((FailureKind::InvalidResponse, e.to_string()));
                return;
            }
        };
        if let Some(e) = info.error.take() {
            self.failure = Some((FailureKind::MidStreamError, e));
            self.stream_end = Some(t);
            return;
        }
        if !self.recognised {
            if info.channel.is_some()
                || info.usage.is_some()
                || info.finish_reason.is_some()
                || info.done
                || info.choice
                || info.pooled.is_some()
            {
                self.recognised = true;
                self.unread = Vec::new();
            } else {
                self.unread_count = self.unread_count.saturating_add(1);
                if self.unread.len() < UNREAD_KEPT && data.len() <= UNREAD_BYTES {
                    self.unread.push(data.to_owned());
                }
            }
        }
        if let Some(u) = info.usage {
            // A count no request can have (2^63 tokens had been taken, and
            // the run's document was then refused as damaged by goodput).
            let counts = [
                ("completion_tokens", u.completion_tokens),
                ("prompt_tokens", u.prompt_tokens),
                ("prompt_tokens_details.cached_tokens", u.prompt_tokens_details.and_then(|d| d.cached_tokens)),
            ];
            if let Some((name, n)) =
                counts.into_iter().filter_map(|(name, n)| Some((name, n?))).find(|&(_, n)| n > MOST_USAGE_TOKENS)
            {
                self.failure = Some((
                    FailureKind::InvalidResponse,
                    format!(
                        "the server's usage says {n} {name}, more than any request holds ({MOST_USAGE_TOKENS}): its \
                         counts cannot be used"
                    ),
                ));
                self.stream_end = Some(t);
                return;
            }
            if let Some(c) = u.completion_tokens {
                if let Some(high) = self.usage_high.filter(|&h| c < h) {
                    self.usage_fell.get_or_insert((high, c));
                }
                self.usage_high = Some(self.usage_high.map_or(c, |h| h.max(c)));
            }
            self.usage = Some(self.usage.map_or(u, |old| old.merge(u)));
        }
        if info.pooled.is_some() {
            self.pooled = info.pooled;
        }
        if info.choice {
            self.choices = Some((self.choices.map_or(t, |c| c.0), t));
        }
        if info.finish_reason.is_some() {
            self.finish_reason = info.finish_reason.take();
        }
        if let Some(channel) = info.channel {
            let read = self.read;
            if read.serial != 0 {
                let shared = self.last_chunk_read == Some(read.serial);
                self.shared_reads += u32::from(shared);
                // The chunk before came in this read too, with these later
                // bytes' stamp: a bound, unless the whole read came within
                // `LATE_READ` of the client's last look (see there).
                if shared && read.t.saturating_sub(read.since) > LATE_READ {
                    self.bound_chunks += 1;
                    self.ttft_bound |= self.chunks.len() == 1;
                }
                self.last_chunk_read = Some(read.serial);
            }
            if let Some(lag) = read.lag {
                self.read_lag_max = Some(self.read_lag_max.map_or(lag, |m| m.max(lag)));
            }
            if self.chunks.len() >= most {
                self.failure = Some((
                    FailureKind::InvalidResponse,
                    match self.max_tokens {
                        Some(m) => format!(
                            "the server streamed more than {most} output chunks where max_tokens asked for {m}: it \
                             does not honour max_tokens, and the rest of the stream was not read"
                        ),
                        None => format!(
                            "the server streamed more than {most} output chunks without ending: the rest of the \
                             stream was not read (give the requests a max_tokens, --output-tokens)"
                        ),
                    },
                ));
                self.stream_end = Some(t);
                return;
            }
            self.chunks.push(OutputChunk { t, tokens: 0, channel });
            if !self.cumulative_gap {
                match info.usage.and_then(|u| u.completion_tokens) {
                    Some(c) => {
                        if self.cumulative.capacity() == 0 {
                            self.cumulative.reserve(self.chunks.room());
                        }
                        self.cumulative.push(c);
                    }
                    None => {
                        self.cumulative_gap = true;
                        self.cumulative = Vec::new();
                    }
                }
            }
            match &mut self.reply {
                Reply::Nothing => {}
                Reply::Text(reply) => reply.push_str(&info.text[..info.content_len]),
                Reply::Hash(h) => {
                    h.write(&info.text.as_bytes()[..info.content_len]);
                }
            }
            if let Some(texts) = &mut self.chunk_texts {
                texts.push(info.text.clone());
            }
        }
        if info.done {
            self.done = true;
            self.stream_end = Some(t);
        }
    }

    /// Completes `rec` with what was read: chunks with their token counts, the
    /// counts and their sources, and the outcome.
    pub fn into_record(self, rec: &mut RequestRecord, tokenizer: Option<&TokenCounter>, prompt: &PromptBody) {
        let end_words = format!("the stream ended before {}", self.api.stream_end());
        let empty = !self.any_body;
        let other_api = self.other_api();
        let ResponseReader {
            chunks,
            chunk_texts,
            cumulative,
            cumulative_gap,
            usage_fell,
            usage,
            done,
            finish_reason,
            failure,
            stream_end,
            read_lag_max,
            shared_reads,
            bound_chunks,
            ttft_bound,
            choices,
            pooled,
            whole,
            ..
        } = self;
        let chunks = chunks.into_chunks();
        rec.read_lag_max = read_lag_max;
        rec.shared_reads = shared_reads;
        rec.bound_chunks = bound_chunks;
        rec.ttft_bound |= ttft_bound;
        let usage = usage.unwrap_or_default();
        rec.counts.chunks = chunks.len() as u64;
        rec.counts.usage_completion = usage.completion_tokens;
        rec.counts.usage_prompt = usage.prompt_tokens;
        rec.counts.usage_cached_prompt = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
        // Each chunk's tokens counted in the context of the output before it.
        let counted = match (tokenizer, &chunk_texts) {
            (Some(t), Some(texts)) => Some(t.in_context_counts(texts)),
            _ => None,
        };
        rec.counts.tokenizer_completion = counted.as_ref().map(|(_, total)| *total);
        if rec.counts.intended_prompt.is_none() && usage.prompt_tokens.is_none() {
            rec.counts.tokenizer_prompt = tokenizer.map(|t| prompt_tokens(t, prompt));
        }

        // A usage that counts fewer output tokens than the output chunks that
        // came (each carries text, so a token at least) contradicts the
        // stream, and is not taken: its 0 had made five chunks "0 out", its
        // 2 a TPOT twice the measured ITL. The record keeps it
        // (`counts.usage_completion`), and the summary warns of it. Unless
        // the server counted as it streamed, and its running counts hold
        // together (they never fell, every chunk carried one, and the last
        // is the total): a token's text may come in two events (a character
        // split across them), each with the same running count, and that
        // count is the truth the chunks' number is not.
        let running = !cumulative_gap
            && usage_fell.is_none()
            && cumulative.last().is_some_and(|&c| c > 0 && Some(c) == usage.completion_tokens);
        let usage_output = usage.completion_tokens.filter(|&n| n >= chunks.len() as u64 || running);
        (rec.output_tokens, rec.output_tokens_source) = match (usage_output, rec.counts.tokenizer_completion) {
            (Some(n), _) => (n, CountSource::Usage),
            (None, Some(n)) => (n, CountSource::Tokenizer),
            (None, None) => (chunks.len() as u64, CountSource::Chunks),
        };
        (rec.input_tokens, rec.input_tokens_source) =
            match (usage.prompt_tokens, rec.counts.tokenizer_prompt, rec.counts.intended_prompt) {
                (Some(n), _, _) => (n, CountSource::Usage),
                (None, Some(n), _) => (n, CountSource::Tokenizer),
                (None, None, Some(n)) => (n, CountSource::Intended),
                // A dataset's prompt, no usage and no tokenizer: not 0
                // tokens (it had been written as "0 in", `intended`), but
                // unknown, and said so once the outcome is known.
                (None, None, None) => (0, CountSource::Unknown),
            };

        // Running counts that went down (2, 4, 3, 10, 5) are no count of
        // each chunk's tokens: taken, they had summed to twice the output.
        if let Some((high, low)) = usage_fell.filter(|_| !cumulative_gap && !cumulative.is_empty()) {
            warn_usage_fell(high, low);
        }
        let continuous =
            !cumulative_gap && usage_fell.is_none() && cumulative.last().copied() == Some(rec.output_tokens);
        let (ks, source): (Vec<u32>, _) = if whole {
            // One body's one chunk: no distribution over chunks to claim.
            (spread_evenly(rec.output_tokens, chunks.len()), ChunkTokenSource::WholeBody)
        } else if continuous {
            let mut prev = 0;
            let ks = cumulative
                .iter()
                .map(|c| {
                    let c = (*c).max(prev);
                    // A count past u32 is no server's honest one: the most a chunk holds.
                    let k = u32::try_from(c - prev).unwrap_or(u32::MAX);
                    prev = c;
                    k
                })
                .collect();
            (ks, ChunkTokenSource::ContinuousUsage)
        } else if let Some((counted, _)) = &counted {
            chunk_counts(rec.output_tokens, counted)
        } else {
            (spread_evenly(rec.output_tokens, chunks.len()), ChunkTokenSource::Even)
        };
        rec.chunk_tokens_source = source;
        rec.chunks = chunks;
        rec.chunks.set_tokens(&ks);
        // The room made for `max_tokens` chunks, given back where fewer came:
        // a record is kept for the whole run, and a failed one, with none,
        // had held it all (a storm's records took 2.6 KB each).
        rec.chunks.shrink_to_fit();
        rec.stream_end = stream_end;
        if let Some((first, last)) = choices {
            rec.first_choice = Some(first).filter(|&t| Some(t) != rec.chunks.first().map(|c| c.t));
            rec.last_choice = Some(last).filter(|&t| Some(t) != rec.chunks.last().map(|c| c.t));
        }
        rec.finish_reason = finish_reason.clone();

        rec.outcome = match failure {
            Some((kind, message)) => Outcome::Failed { kind, message },
            None if !done && finish_reason.is_none() && empty => {
                Outcome::Failed { kind: FailureKind::InvalidResponse, message: EMPTY_BODY.into() }
            }
            None if !done && finish_reason.is_none() => {
                Outcome::Failed { kind: FailureKind::TruncatedStream, message: end_words + &other_api }
            }
            // A pooling answer has no output chunks: its vectors or scores are the answer.
            None if pooled.is_some_and(|n| n > 0) => Outcome::Success,
            None if pooled.is_some() => Outcome::Failed {
                kind: FailureKind::EmptyOutput,
                message: "the answer carried no embeddings or scores".into(),
            },
            None if rec.chunks.is_empty() => Outcome::Failed {
                kind: FailureKind::EmptyOutput,
                message: format!(
                    "the response carried no output (finish reason: {}){other_api}",
                    finish_reason.as_deref().unwrap_or("none")
                ),
            },
            None => Outcome::Success,
        };
        if input_unknown_is_told(rec) {
            warn_input_unknown();
        }
    }
}

impl ResponseReader {
    /// Where the server sent payloads but none was read as the API's: what
    /// to add to the failure's words, naming the APIs they read as (a server
    /// of OpenAI's dialect benched with `--api tgi` had failed as "no output
    /// (finish reason: none)", with no word of why). Empty otherwise.
    fn other_api(&self) -> String {
        if self.recognised || (self.unread_count == 0 && !self.openai_done) {
            return String::new();
        }
        let fits = |api: Api| {
            self.unread.iter().any(|data| {
                crate::protocol::parse_for(api, data).is_ok_and(|i| {
                    i.channel.is_some() || i.finish_reason.is_some() || i.done || i.usage.is_some() || i.error.is_some()
                })
            })
        };
        let mut likely: Vec<Api> = TEXT_APIS.into_iter().filter(|&a| a != self.api && fits(a)).collect();
        // Only OpenAI's streams end with `[DONE]`.
        if likely.is_empty() && self.openai_done {
            likely = vec![Api::Chat, Api::Completions];
        }
        let what = match self.unread_count {
            0 => "nothing but a [DONE] came, which is not".to_owned(),
            1 => "the one payload the server sent is not".to_owned(),
            n => format!("none of the {n} payloads the server sent is"),
        };
        let mut words = format!("; {what} in --api {}'s shape", self.api.as_str());
        if !likely.is_empty() {
            let names: Vec<String> = likely.iter().map(|a| format!("--api {}", a.as_str())).collect();
            words.push_str(&format!(": it reads as {} (is that the server's API?)", names.join(" or ")));
        }
        words
    }
}

/// Says once a run (a process) that a server's running usage went down, and
/// what was done instead.
fn warn_usage_fell(high: u64, low: u64) {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        goodput_core::tell!(
            "warning: the server's running usage.completion_tokens went down within a stream ({high} then {low}): \
             its counts are not each chunk's tokens, and were not taken for them; the output's tokens were shared \
             over its chunks instead (--tokenizer counts each chunk)"
        );
    }
}

/// The bytes every reader of the process holds of lines or events not
/// yet ended: `--max-buffer` bounds each stream's, this all of them, so
/// that memory does not grow with `-c` (one endless line a stream had
/// taken 3.6 GB at `-c 64`).
static HELD: AtomicUsize = AtomicUsize::new(0);

/// A stream holding no more than this is never failed for the process's
/// budget: its lines are a real answer's, and another stream is the one
/// that grows.
const BUDGET_SPARED: usize = 64 << 10;

/// The most bytes [`HELD`] may reach before the stream that passes it
/// fails: `GOODPUT_BUFFER_BUDGET` (bytes) where set, else an eighth of the
/// memory available when first asked (`MemAvailable` of /proc/meminfo: the
/// buffers a line grows through take several times what it holds), else
/// 2 GiB.
fn buffer_budget() -> usize {
    static BUDGET: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BUDGET.get_or_init(|| {
        if let Ok(v) = std::env::var("GOODPUT_BUFFER_BUDGET") {
            match v.trim().parse() {
                Ok(n) => return n,
                Err(_) => goodput_core::tell!(
                    "warning: GOODPUT_BUFFER_BUDGET={v:?} is not a number of bytes: the default budget (an eighth of \
                     the memory available) holds"
                ),
            }
        }
        let available = goodput_core::util::input::available_memory();
        available.map_or(2 << 30, |bytes| usize::try_from(bytes / 8).unwrap_or(usize::MAX))
    })
}

/// Why a response holding `held` bytes is failed when every response of
/// the process holds `total` (with a cap of `limit` bytes each): the
/// budget passed, and this one holds more than a little of it; `None`
/// while within it.
fn over_budget(held: usize, total: usize, limit: usize) -> Option<String> {
    let budget = buffer_budget().max(limit);
    (held > BUDGET_SPARED && total > budget).then(|| {
        format!(
            "the server's answers held {total} bytes not yet ended (lines, events and whole bodies being read), over \
             every request at once, more than the process's budget of {budget} bytes (an eighth of the memory \
             available when the run started, --max-buffer at least); this one held {held}: --max-buffer bounds each \
             answer, so a lower --max-buffer or -c keeps them all within it"
        )
    })
}

/// The bytes of a whole body (`--no-stream`) held while it is read,
/// counted in the process's budget with the streams' unended lines: at
/// `-c 64` bodies of 64 MiB each (`--max-buffer`'s default) had held 4 GiB.
#[derive(Debug, Default)]
pub struct BodyHold(HeldBytes);

impl BodyHold {
    /// Counts `n` bytes held for the body; why it is failed, once the
    /// process's budget is passed and the body holds more than a little of
    /// it (with `limit`, the cap on one body).
    pub fn hold(&mut self, n: usize, limit: usize) -> Option<String> {
        let total = self.0.set(n);
        over_budget(n, total, limit)
    }
}

/// One reader's part of [`HELD`], given back when the reader is dropped.
#[derive(Debug, Default)]
struct HeldBytes(usize);

impl HeldBytes {
    /// Makes this reader's part `n` bytes; the process's total after.
    fn set(&mut self, n: usize) -> usize {
        let total = if n >= self.0 {
            HELD.fetch_add(n - self.0, Ordering::Relaxed) + (n - self.0)
        } else {
            HELD.fetch_sub(self.0 - n, Ordering::Relaxed) - (self.0 - n)
        };
        self.0 = n;
        total
    }
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        HELD.fetch_sub(self.0, Ordering::Relaxed);
    }
}

/// Whether `rec`'s unknown input tokens are worth [`warn_input_unknown`]'s
/// words: a completed request's. A failed one sends no usage whatever was
/// asked (a prompt over the context, a server that fell over): its unknown
/// count had told a run without --no-usage to "drop --no-usage".
fn input_unknown_is_told(rec: &RequestRecord) -> bool {
    rec.input_tokens_source == CountSource::Unknown && rec.outcome == Outcome::Success
}

/// Says once that a prompt's input tokens are unknown (see
/// [`CountSource::Unknown`]), and how to count them. The reader does not
/// know whether usage was asked for, so the words name both cases.
fn warn_input_unknown() {
    static SAID: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, std::sync::atomic::Ordering::Relaxed) {
        goodput_core::tell!(
            "warning: a completed request came with no usage from the server, and the dataset's prompts have no \
             intended length: their input tokens are unknown (input_tokens_source \"unknown\", counted as 0, so \
             the input totals and rates leave them out); pass --tokenizer with the served model's tokenizer.json to \
             count them, or let the server send usage (goodput asks for it unless --no-usage is given; a server \
             that ignores stream_options.include_usage sends none)"
        );
    }
}

/// Whether a body meant to be one JSON document is an SSE event stream:
/// its first line is a `data:`, `event:`, `id:` or `retry:` field, or a
/// comment (`:`).
fn looks_like_sse(text: &str) -> bool {
    let first = text.trim_start();
    first.starts_with(':') || ["data:", "event:", "id:", "retry:"].iter().any(|f| first.starts_with(f))
}

/// The words of a 2xx answer with nothing in its body.
const EMPTY_BODY: &str = "the server's answer is empty: a success status with no body, where the API's answer was due";

fn prompt_tokens(t: &TokenCounter, prompt: &PromptBody) -> u64 {
    match prompt {
        PromptBody::Text(s) => t.count(s) as u64,
        PromptBody::Turns(turns) => turns.iter().map(|s| t.count(s) as u64).sum(),
        PromptBody::Messages(m) => {
            m.iter().filter_map(|msg| msg.get("content").and_then(|c| c.as_str())).map(|s| t.count(s) as u64).sum()
        }
    }
}

/// Whether an event's data is `[DONE]` (the end of an OpenAI stream),
/// whitespace around it allowed: `data.trim() == "[DONE]"`, without trimming
/// the end of every JSON payload to learn that it is not (a payload's first
/// character already says so).
fn is_done(data: &str) -> bool {
    data.trim_start().strip_prefix("[DONE]").is_some_and(|rest| rest.trim_end().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::{Channel, RequestMetrics};

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp/");

    fn read(bytes: &[u8], splits: &[usize]) -> RequestRecord {
        read_api(Api::Chat, bytes, splits).0
    }

    fn read_api(api: Api, bytes: &[u8], splits: &[usize]) -> (RequestRecord, Option<String>) {
        let mut r = ResponseReader::new(false).for_api(api).keeping_reply();
        let mut last = 0;
        for (i, &s) in splits.iter().chain(std::iter::once(&bytes.len())).enumerate() {
            let t = Duration::from_millis(i as u64 * 10);
            r.feed(&bytes[last..s], ReadStamp { t, lag: None, serial: i as u64 + 1, since: Duration::ZERO });
            last = s;
        }
        r.end_of_stream(Duration::from_secs(9));
        let reply = r.take_reply();
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        (rec, reply)
    }

    /// Pieces of what servers send, and bytes no server should.
    fn wire_piece() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"{\"choices\":[{\"delta\":{\"content\":\"a\\u00e9\"}}]}".to_vec()),
            Just(
                b"{\"choices\":[{\"text\":\" b\",\"finish_reason\":null}],\"usage\":{\"completion_tokens\":2}}"
                    .to_vec()
            ),
            Just(b"{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}".to_vec()),
            Just(b"{\"message\":{\"content\":\"x\"},\"done\":false}".to_vec()),
            Just(b"{\"response\":\"y\",\"done\":true,\"eval_count\":2}".to_vec()),
            Just(b"{\"token\":{\"id\":1,\"text\":\"z\"},\"generated_text\":null}".to_vec()),
            Just(b"{\"content\":\"w\",\"stop\":false,\"tokens_predicted\":1}".to_vec()),
            Just(b"{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"v\"}}".to_vec()),
            Just(b"event: error\n".to_vec()),
            Just(b"event: message_stop\n".to_vec()),
            Just(b": keep-alive\n".to_vec()),
            Just(b"[DONE]".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n\n".to_vec()),
            Just(b"\r".to_vec()),
            Just(vec![0xE2, 0x82]),
            proptest::collection::vec(any::<u8>(), 0..12),
        ]
    }

    /// What a reader made of `bytes` fed in the pieces `cuts` makes (same
    /// stamp for every read, so that only the splitting differs).
    fn read_split(api: Api, bytes: &[u8], cuts: &[usize]) -> RequestRecord {
        let mut r = ResponseReader::new(false).for_api(api);
        for piece in crate::testing::split_at_cuts(bytes, cuts) {
            r.feed(piece, ReadStamp { t: Duration::from_millis(1), ..Default::default() });
        }
        r.end_of_stream(Duration::from_millis(2));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        rec
    }

    proptest::proptest! {
        /// `is_done` is `data.trim() == "[DONE]"`, Unicode whitespace included.
        #[test]
        fn done_is_the_trimmed_marker(
            before in "[ \t\r\n\u{a0}\u{2003}\u{3000}x]{0,3}",
            body in "(\\[DONE\\]|\\[DONE|DONE\\]|\\{\"a\":1\\}|\\[DONE\\]x|)",
            after in "[ \t\r\n\u{a0}\u{2003}\u{3000}x]{0,3}",
        ) {
            let data = format!("{before}{body}{after}");
            proptest::prop_assert_eq!(is_done(&data), data.trim() == "[DONE]", "{:?}", data);
        }
    }

    proptest::proptest! {
        // PROPTEST_CASES=N, set when running, runs N cases: a longer search.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
        /// Whatever bytes a server sends, in whatever pieces they arrive,
        /// every API's reader reads them without panicking, and to the same
        /// record however they were split.
        #[test]
        fn any_bytes_split_anywhere_read_the_same(
            pieces in proptest::collection::vec(wire_piece(), 0..40),
            cuts in proptest::collection::vec(proptest::prelude::any::<usize>(), 0..30),
        ) {
            let bytes = pieces.concat();
            for api in Api::ALL {
                let whole = read_split(api, &bytes, &[]);
                let split = read_split(api, &bytes, &cuts);
                proptest::prop_assert_eq!(&whole, &split, "{:?}", api);
                let _ = read_whole(api, &bytes);
            }
        }
    }

    /// A whole non-streamed `body` of `api`, read at 50 ms.
    fn read_whole(api: Api, body: &[u8]) -> RequestRecord {
        let mut r = ResponseReader::new(false).for_api(api);
        r.whole_body(body, Duration::from_millis(50));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        rec
    }

    /// A Messages stream as Anthropic sends one: typed events, a `ping`, a
    /// thinking block before the text, the prompt's counts at the start and
    /// the output's at the end.
    const MESSAGES_STREAM: &str = concat!(
        "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"usage\":{\"input_tokens\":5,\"cache_read_input_tokens\":16,\"output_tokens\":1}}}\r\n\r\n",
        "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\r\n\r\n",
        "event: ping\r\ndata: {\"type\": \"ping\"}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2ln\"}}\r\n\r\n",
        "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":0}\r\n\r\n",
        "event: content_block_start\r\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\r\n\r\n",
        "event: content_block_delta\r\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\" world\"}}\r\n\r\n",
        "event: content_block_stop\r\ndata: {\"type\":\"content_block_stop\",\"index\":1}\r\n\r\n",
        "event: message_delta\r\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\r\n\r\n",
        "event: message_stop\r\ndata: {\"type\":\"message_stop\"}\r\n\r\n",
    );

    /// A usage count no request can have fails the request (2^64 − 1 tokens
    /// had been taken, and the run's own document was then refused as
    /// damaged).
    #[test]
    fn a_usage_count_past_any_request_fails_it() {
        let stream = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":18446744073709551615}}\n\n",
            "data: [DONE]\n\n",
        );
        let rec = read(stream.as_bytes(), &[]);
        let Outcome::Failed { kind, message } = &rec.outcome else { panic!("{:?}", rec.outcome) };
        assert_eq!(*kind, FailureKind::InvalidResponse);
        assert!(
            message.contains("usage says 18446744073709551615 completion_tokens, more than any request holds"),
            "{message}"
        );
        let honest = stream.replace("18446744073709551615", "4294967295");
        assert_eq!(read(honest.as_bytes(), &[]).outcome, Outcome::Success);
    }

    /// A stream that does not end is failed once it passes twice the
    /// max_tokens asked for (and 1,024 more), its reading stopped there: a
    /// server streaming without end had filled the client's memory until it
    /// aborted, losing the run.
    #[test]
    fn a_stream_past_its_max_tokens_is_failed_and_no_longer_read() {
        let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\n";
        for (max_tokens, most) in [(Some(16), 1056), (None, MOST_CHUNKS)] {
            let mut r = ResponseReader::new(false).expecting(max_tokens);
            let stamp = |i: u64| ReadStamp { t: Duration::from_millis(i), lag: None, serial: i, since: Duration::ZERO };
            let mut fed = 0;
            let batch = chunk.repeat(1000);
            while !r.finished() {
                r.feed(batch.as_bytes(), stamp(fed as u64 + 1));
                fed += 1000;
                assert!(fed <= most + 1000, "still reading after {fed} chunks");
            }
            let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
            r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
            assert_eq!(rec.chunks.len(), most, "{max_tokens:?}");
            let Outcome::Failed { kind, message } = &rec.outcome else { panic!("{:?}", rec.outcome) };
            assert_eq!(*kind, FailureKind::InvalidResponse);
            let says = match max_tokens {
                Some(_) => "where max_tokens asked for 16: it does not honour max_tokens",
                None => "without ending",
            };
            assert!(
                message.contains(&format!("more than {most} output chunks")) && message.contains(says),
                "{message}"
            );
        }
    }

    /// An Ollama `/api/chat` stream: one JSON object per line, the last with the counts.
    const OLLAMA_STREAM: &str = concat!(
        "{\"model\":\"m\",\"created_at\":\"2024-08-07T03:57:33.03Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"hmm\"},\"done\":false}\n",
        "{\"model\":\"m\",\"created_at\":\"2024-08-07T03:57:33.04Z\",\"message\":{\"role\":\"assistant\",\"content\":\"Hello\"},\"done\":false}\n",
        "{\"model\":\"m\",\"created_at\":\"2024-08-07T03:57:33.05Z\",\"message\":{\"role\":\"assistant\",\"content\":\" world\"},\"done\":false}\n",
        "{\"model\":\"m\",\"created_at\":\"2024-08-07T03:57:33.06Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done_reason\":\"stop\",\"done\":true,\"total_duration\":4353619900,\"prompt_eval_count\":21,\"eval_count\":6}\n",
    );

    #[test]
    fn native_streams_read_the_same_at_every_split() {
        for (api, stream, finish, prompt, cached) in [
            (Api::Messages, MESSAGES_STREAM, "end_turn", 21, Some(16)),
            (Api::OllamaChat, OLLAMA_STREAM, "stop", 21, None),
        ] {
            let bytes = stream.as_bytes();
            let (whole, reply) = read_api(api, bytes, &[]);
            assert_eq!(whole.outcome, Outcome::Success, "{api:?}");
            let channels: Vec<Channel> = whole.chunks.iter().map(|c| c.channel).collect();
            assert_eq!(channels, [Channel::Reasoning, Channel::Content, Channel::Content], "{api:?}");
            assert_eq!((whole.output_tokens, whole.output_tokens_source), (6, CountSource::Usage));
            assert_eq!((whole.input_tokens, whole.counts.usage_cached_prompt), (prompt, cached), "{api:?}");
            assert_eq!(whole.finish_reason.as_deref(), Some(finish));
            assert_eq!(reply.as_deref(), Some("Hello world"), "the reply carries no reasoning");
            for cut in 0..=bytes.len() {
                let (rec, _) = read_api(api, bytes, &[cut]);
                assert_eq!(rec.outcome, Outcome::Success, "{api:?} cut at {cut}");
                assert_eq!(rec.output_tokens, 6);
                let tokens: Vec<u32> = rec.chunks.iter().map(|c| c.tokens).collect();
                assert_eq!(tokens, whole.chunks.iter().map(|c| c.tokens).collect::<Vec<_>>(), "{api:?} cut at {cut}");
            }
        }
    }

    /// TGI writes `data:` without a space, one event per token; the
    /// end-of-sequence token is special and carries the details.
    const TGI_STREAM: &str = concat!(
        "data:{\"index\":1,\"token\":{\"id\":10,\"text\":\"Hello\",\"logprob\":-0.1,\"special\":false},\"generated_text\":null,\"details\":null}\n\n",
        "data:{\"index\":2,\"token\":{\"id\":11,\"text\":\" world\",\"logprob\":-0.2,\"special\":false},\"generated_text\":null,\"details\":null}\n\n",
        "data:{\"index\":3,\"token\":{\"id\":2,\"text\":\"</s>\",\"logprob\":-0.1,\"special\":true},\"generated_text\":\"Hello world\",\"details\":{\"finish_reason\":\"eos_token\",\"generated_tokens\":3,\"seed\":null,\"input_length\":21}}\n\n",
    );

    /// llama.cpp's `/completion`: pieces of text, then a `stop` event with the counts.
    const LLAMACPP_STREAM: &str = concat!(
        "data: {\"index\":0,\"content\":\"Hello\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":1,\"tokens_evaluated\":21}\n\n",
        "data: {\"index\":0,\"content\":\" world\",\"tokens\":[],\"stop\":false,\"id_slot\":0,\"tokens_predicted\":2,\"tokens_evaluated\":21}\n\n",
        "data: {\"index\":0,\"content\":\"\",\"tokens\":[],\"id_slot\":0,\"stop\":true,\"model\":\"m\",\"tokens_predicted\":3,\"tokens_evaluated\":21,\"stop_type\":\"eos\",\"timings\":{\"cache_n\":16,\"prompt_n\":5}}\n\n",
    );

    #[test]
    fn tgi_and_llamacpp_streams_read_the_same_at_every_split() {
        for (api, stream, finish, chunks, cached) in
            [(Api::Tgi, TGI_STREAM, "eos_token", 3, None), (Api::LlamaCpp, LLAMACPP_STREAM, "eos", 2, Some(16))]
        {
            let bytes = stream.as_bytes();
            let (whole, reply) = read_api(api, bytes, &[]);
            assert_eq!(whole.outcome, Outcome::Success, "{api:?}");
            assert_eq!(whole.chunks.len(), chunks, "{api:?}");
            assert!(whole.chunks.iter().all(|c| c.channel == Channel::Content));
            assert_eq!((whole.output_tokens, whole.output_tokens_source), (3, CountSource::Usage), "{api:?}");
            assert_eq!((whole.input_tokens, whole.counts.usage_cached_prompt), (21, cached), "{api:?}");
            assert_eq!(whole.finish_reason.as_deref(), Some(finish));
            assert_eq!(reply.as_deref(), Some("Hello world"), "{api:?}: the special token is not visible");
            for cut in 0..=bytes.len() {
                let (rec, _) = read_api(api, bytes, &[cut]);
                assert_eq!((rec.outcome.clone(), rec.chunks.len()), (Outcome::Success, chunks), "{api:?} cut at {cut}");
            }
        }
        // Without the details event a TGI stream is cut short.
        let cut = &TGI_STREAM[..TGI_STREAM.rfind("data:").unwrap()];
        assert_eq!(
            read_api(Api::Tgi, cut.as_bytes(), &[]).0.outcome.failure_kind(),
            Some(FailureKind::TruncatedStream)
        );
    }

    #[test]
    fn native_failures_are_classified() {
        let overloaded = concat!(
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        );
        let (rec, _) = read_api(Api::Messages, overloaded.as_bytes(), &[]);
        assert_eq!(rec.outcome, Outcome::Failed { kind: FailureKind::MidStreamError, message: "Overloaded".into() });
        assert_eq!(rec.chunks.len(), 1, "output before the error is kept");
        // Cut before message_delta and message_stop: no finish, no end.
        let cut = &MESSAGES_STREAM[..MESSAGES_STREAM.find("event: message_delta").unwrap()];
        assert_eq!(
            read_api(Api::Messages, cut.as_bytes(), &[]).0.outcome.failure_kind(),
            Some(FailureKind::TruncatedStream)
        );

        let died = "{\"model\":\"m\",\"response\":\"a\",\"done\":false}\n{\"error\":\"llama runner process has terminated\"}\n";
        let (rec, _) = read_api(Api::OllamaGenerate, died.as_bytes(), &[]);
        assert_eq!(rec.outcome.failure_kind(), Some(FailureKind::MidStreamError));
        let cut = &OLLAMA_STREAM[..OLLAMA_STREAM.rfind("{\"model\"").unwrap()];
        assert_eq!(
            read_api(Api::OllamaChat, cut.as_bytes(), &[]).0.outcome.failure_kind(),
            Some(FailureKind::TruncatedStream)
        );
        // A last line that lost its newline still counts.
        let unterminated = OLLAMA_STREAM.trim_end();
        assert_eq!(read_api(Api::OllamaChat, unterminated.as_bytes(), &[]).0.outcome, Outcome::Success);
    }

    #[test]
    fn chunks_held_in_the_reader_and_moved_to_its_list_keep_their_order() {
        for n in [0, 1, STAGED - 1, STAGED, STAGED + 1, 3 * STAGED + 2] {
            let mut list = ChunkList::default();
            let want: Vec<OutputChunk> = (0..n)
                .map(|i| OutputChunk { t: Duration::from_millis(i as u64), tokens: 0, channel: Channel::Content })
                .collect();
            for (i, c) in want.iter().enumerate() {
                assert_eq!(list.len(), i);
                list.push(*c);
            }
            assert_eq!(list.len(), n);
            assert_eq!(list.into_chunks().to_vec(), want, "{n} chunks");
        }
    }

    #[test]
    fn a_kept_reply_is_the_visible_content_only() {
        let stream = concat!(
            "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"let me think\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\"Hello\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"content\":\" world\"},\"finish_reason\":\"stop\"}]}\n\n",
            "data: [DONE]\n\n",
        );
        let mut r = ResponseReader::new(false).keeping_reply();
        r.feed(stream.as_bytes(), ReadStamp::default());
        assert_eq!(r.take_reply().as_deref(), Some("Hello world"));
        let mut r = ResponseReader::new(false);
        r.feed(stream.as_bytes(), ReadStamp::default());
        assert_eq!(r.take_reply(), None, "kept only when asked for");
        assert_eq!(r.reply_hash(), None);
        // Hashed a chunk at a time, the same hash as the kept text's.
        let mut r = ResponseReader::new(false).hashing_reply();
        for piece in stream.split_inclusive("\n\n") {
            r.feed(piece.as_bytes(), ReadStamp::default());
        }
        assert_eq!(r.take_reply(), None, "the text is not kept");
        assert_eq!(r.reply_hash(), Some(text_hash("Hello world")));
    }

    /// Everything but the timestamps, which depend on the split.
    fn shape(r: &RequestRecord) -> (u64, u64, usize, Vec<u32>, Outcome, Option<String>) {
        (
            r.output_tokens,
            r.input_tokens,
            r.chunks.len(),
            r.chunks.iter().map(|c| c.tokens).collect(),
            r.outcome.clone(),
            r.finish_reason.clone(),
        )
    }

    #[test]
    fn reads_that_carry_two_chunks_and_the_longest_wait_are_recorded() {
        let chunk = |c: &str| format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{c}\"}}}}]}}\n\n");
        let role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
        let mut r = ResponseReader::new(false);
        // A read at `ms` whose last bytes waited `lag_ms`, the client's last
        // look at the socket empty `window_ms` before its stamp.
        let at = |ms: u64, lag_ms, serial, window_ms: u64| ReadStamp {
            t: Duration::from_millis(ms),
            lag: Some(Duration::from_millis(lag_ms)),
            serial,
            since: Duration::from_millis(ms - window_ms),
        };
        // A role-only chunk then the first output in one read: not a shared read.
        r.feed(format!("{role}{}", chunk("a")).as_bytes(), at(10, 1, 1, 10));
        // Two output chunks in one read: the second shared it.
        r.feed(format!("{}{}", chunk("b"), chunk("c")).as_bytes(), at(20, 7, 2, 10));
        // One read split across two feeds (two HTTP chunks) is still one read.
        r.feed(chunk("d").as_bytes(), at(30, 0, 3, 2));
        r.feed(chunk("e").as_bytes(), at(30, 0, 3, 2));
        r.feed(b"data: [DONE]\n\n", at(40, 30, 4, 10));
        r.end_of_stream(Duration::from_millis(40));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        assert_eq!(rec.chunks.len(), 5);
        assert_eq!(rec.shared_reads, 2);
        // `[DONE]` carries no output: its read's wait is not an output chunk's.
        assert_eq!(rec.read_lag_max, Some(Duration::from_millis(7)));
        let line = serde_json::to_string(&rec).unwrap();
        assert!(line.contains("\"read_lag_max_ns\":7000000") && line.contains("\"shared_reads\":2"), "{line}");
        // Of the two shared reads, the one whose bytes came somewhere in
        // 10 ms makes its earlier chunk a bound; the one whose bytes all
        // came within 2 ms of the client's last look (LATE_READ) does not.
        assert_eq!((rec.bound_chunks, rec.ttft_bound), (1, false));
        assert!(line.contains("\"bound_chunks\":1") && !line.contains("ttft_bound"), "{line}");
        // The first output chunk read with the next, 30 ms after the last
        // look, and that read's lag nothing (a starved client woken by the
        // last bytes): TTFT is a bound all the same.
        let mut r = ResponseReader::new(false);
        r.feed(format!("{role}{}{}", chunk("a"), chunk("b")).as_bytes(), at(30, 0, 1, 30));
        r.feed(chunk("c").as_bytes(), at(40, 0, 2, 10));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        assert_eq!((rec.shared_reads, rec.bound_chunks, rec.ttft_bound), (1, 1, true));
        // Read together within 1 ms of the last look: shared, no bound.
        let mut r = ResponseReader::new(false);
        r.feed(format!("{}{}", chunk("a"), chunk("b")).as_bytes(), at(30, 0, 1, 1));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        assert_eq!((rec.shared_reads, rec.bound_chunks, rec.ttft_bound), (1, 0, false));
        // Without the kernel's times (reqwest) the field is left out.
        let plain = read(chunk("x").as_bytes(), &[]);
        assert_eq!(plain.read_lag_max, None);
        assert!(!serde_json::to_string(&plain).unwrap().contains("read_lag"));
    }

    #[test]
    fn recorded_streams_read_the_same_at_every_split() {
        for (file, n_out, n_in, chunks) in
            [("chat-stream-usage.sse", 24, 15, 24), ("completions-stream-usage.sse", 24, 4, 24)]
        {
            let bytes = std::fs::read(format!("{FIX}{file}")).unwrap();
            let whole = read(&bytes, &[]);
            assert_eq!(whole.outcome, Outcome::Success, "{file}");
            assert_eq!((whole.output_tokens, whole.input_tokens, whole.chunks.len()), (n_out, n_in, chunks), "{file}");
            assert_eq!(whole.output_tokens_source, CountSource::Usage);
            for i in 0..=bytes.len() {
                assert_eq!(shape(&read(&bytes, &[i])), shape(&whole), "{file} split at {i}");
            }
            // Three-way splits across a sample of positions.
            for i in (0..bytes.len()).step_by(97) {
                for j in (i..bytes.len()).step_by(89) {
                    assert_eq!(shape(&read(&bytes, &[i, j])), shape(&whole), "{file} split at {i},{j}");
                }
            }
        }
    }

    #[test]
    fn usage_on_the_last_choice_chunk_is_found_even_unasked() {
        // llama.cpp puts usage on its final `"text": ""` chunk even without include_usage.
        let bytes = std::fs::read(format!("{FIX}completions-stream.sse")).unwrap();
        let rec = read(&bytes, &[]);
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (16, CountSource::Usage));
    }

    #[test]
    fn stream_without_usage_counts_chunks() {
        let s = b"data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        let rec = read(s, &[]);
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (2, CountSource::Chunks));
        // No usage, no tokenizer and no intended length: not counted.
        assert_eq!((rec.input_tokens, rec.input_tokens_source), (0, CountSource::Unknown));
    }

    /// Only a completed request's unknown input is told: a failed one
    /// sends no usage whether or not it was asked for, and had told a run
    /// without --no-usage to "drop --no-usage".
    #[test]
    fn unknown_input_is_told_of_completed_requests_only() {
        let done = b"data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n";
        let rec = read_api(Api::Completions, done, &[]).0;
        assert_eq!((rec.input_tokens_source, &rec.outcome), (CountSource::Unknown, &Outcome::Success));
        assert!(input_unknown_is_told(&rec));
        // Cut off before its end: failed, its input unknown all the same, and not told.
        let cut = b"data: {\"choices\":[{\"text\":\"a\"}]}\n\n";
        let rec = read_api(Api::Completions, cut, &[]).0;
        assert!(matches!(rec.outcome, Outcome::Failed { .. }), "{:?}", rec.outcome);
        assert_eq!(rec.input_tokens_source, CountSource::Unknown);
        assert!(!input_unknown_is_told(&rec));
    }

    #[test]
    fn a_chunk_is_stamped_when_its_last_byte_arrives() {
        let s = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n";
        let first_content = s.windows(7).position(|w| w == b"content").unwrap();
        let rec = read(s, &[first_content, first_content + 30]);
        // Split 0 → t=0 (role only), split 1 → t=10 ms completes the first content event.
        assert_eq!(rec.chunks.at(0).t, Duration::from_millis(10));
        assert_eq!(rec.chunks.at(1).t, Duration::from_millis(20));
        assert_eq!(rec.ttft(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn failures_are_classified() {
        let err = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"error\":{\"message\":\"engine died\"}}\n\n";
        let rec = read(err, &[]);
        assert_eq!(rec.outcome, Outcome::Failed { kind: FailureKind::MidStreamError, message: "engine died".into() });
        assert_eq!(rec.chunks.len(), 1, "output before the error is kept");

        let ev = b"event: error\ndata: {\"message\":\"overloaded\"}\n\n";
        assert_eq!(read(ev, &[]).outcome.failure_kind(), Some(FailureKind::MidStreamError));

        let cut = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
        assert_eq!(read(cut, &[]).outcome.failure_kind(), Some(FailureKind::TruncatedStream));

        let empty = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        assert_eq!(read(empty, &[]).outcome.failure_kind(), Some(FailureKind::EmptyOutput));

        let junk = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {oops\n\n";
        assert_eq!(read(junk, &[]).outcome.failure_kind(), Some(FailureKind::InvalidResponse));

        // A finish reason without [DONE] is a complete answer.
        let no_done = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n";
        assert_eq!(read(no_done, &[]).outcome, Outcome::Success);
    }

    #[test]
    fn continuous_usage_gives_per_chunk_counts() {
        let s = b"data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}],\"usage\":{\"completion_tokens\":2}}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}],\"usage\":{\"completion_tokens\":3}}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"defg\"}}],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n";
        let rec = read(s, &[]);
        assert_eq!(rec.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
        assert_eq!(rec.chunks.iter().map(|c| c.tokens).collect::<Vec<_>>(), vec![2, 1, 4]);
    }

    /// Running counts that go down (2, 4, 3, 10, 5, then a final 5) are not
    /// taken as each chunk's tokens: the chunks' counts sum to the output's
    /// (they had summed to 10 for an output of 5).
    #[test]
    fn running_usage_that_goes_down_is_not_taken_per_chunk() {
        let mut s = String::new();
        for (text, n) in [("a", 2), ("b", 4), ("c", 3), ("d", 10), ("e", 5)] {
            s += &format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}],\"usage\":{{\"completion_tokens\":{n}}}}}\n\n"
            );
        }
        s += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\n\ndata: [DONE]\n\n";
        let rec = read(s.as_bytes(), &[]);
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (5, CountSource::Usage));
        assert_ne!(rec.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
        assert_eq!(rec.chunks.iter().map(|c| c.tokens as u64).sum::<u64>(), 5);
        // A second final usage below the first: not taken per chunk either.
        let s = "data: {\"choices\":[{\"delta\":{\"content\":\"ab\"}}],\"usage\":{\"completion_tokens\":2}}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\"c\"}}],\"usage\":{\"completion_tokens\":3}}\n\n\
data: {\"choices\":[],\"usage\":{\"completion_tokens\":3}}\n\n\
data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";
        let rec = read(s.as_bytes(), &[]);
        assert_ne!(rec.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
        assert_eq!(rec.chunks.iter().map(|c| c.tokens as u64).sum::<u64>(), rec.output_tokens);
    }

    /// A token's text split over two events (a character cut in two), each
    /// carrying the same running count: 40 chunks for 20 tokens, and the
    /// running counts, which never fell and end at the total, are taken.
    #[test]
    fn running_usage_over_tokens_split_in_two_events_is_taken() {
        let mut s = String::new();
        for n in 1..=20 {
            for half in ["a", "b"] {
                s += &format!(
                    "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{half}\"}}}}],\"usage\":{{\"completion_tokens\":{n}}}}}\n\n"
                );
            }
        }
        s += "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":20}}\n\ndata: [DONE]\n\n";
        let rec = read(s.as_bytes(), &[]);
        assert_eq!(rec.chunks.len(), 40);
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (20, CountSource::Usage));
        assert_eq!(rec.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
        let ks: Vec<u32> = rec.chunks.iter().map(|c| c.tokens).collect();
        assert_eq!(ks, [1, 0].repeat(20));
        assert!(!goodput_core::analysis::summary::usage_short(&rec), "no warning that the usage is wrong");
        // A running count of 0 on every chunk is no count of them.
        let mut s = String::new();
        for half in ["a", "b", "c"] {
            s += &format!(
                "data: {{\"choices\":[{{\"delta\":{{\"content\":\"{half}\"}}}}],\"usage\":{{\"completion_tokens\":0}}}}\n\n"
            );
        }
        s += "data: [DONE]\n\n";
        let rec = read(s.as_bytes(), &[]);
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (3, CountSource::Chunks));
    }

    #[test]
    fn whole_body_is_one_chunk() {
        let rec = read_whole(Api::Chat, &std::fs::read(format!("{FIX}chat-nostream.json")).unwrap());
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!(rec.chunks.len(), 1);
        assert_eq!(rec.chunks.at(0).channel, Channel::Content);
        assert_eq!(rec.chunks.at(0).tokens as u64, rec.output_tokens);
        assert_eq!(rec.tpot(), None);
        // One body claims no running usage, and no tokens a chunk.
        assert_eq!(rec.chunk_tokens_source, ChunkTokenSource::WholeBody);
        assert!(rec.output_tokens > 1 && rec.output_tokens_source == CountSource::Usage);
        assert_eq!(goodput_core::analysis::summary::ChunkTokens::of(std::iter::once(&rec)), None);
    }

    const NATIVE_FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp-native/");

    /// Responses recorded from a live llama.cpp `llama-server` (its native
    /// `/completion` and its `/v1/messages`): read whole and at every split,
    /// with the server's own counts, cached prompt tokens and finish reason.
    #[test]
    fn recorded_llamacpp_native_streams_read_the_same_at_every_split() {
        for (file, api, chunks, output, prompt, cached, finish) in [
            ("completion-stream.sse", Api::LlamaCpp, 6, 6, 5, Some(0), "limit"),
            ("completion-stream-cached.sse", Api::LlamaCpp, 4, 4, 13, Some(12), "limit"),
            ("messages-stream.sse", Api::Messages, 5, 5, 16, Some(0), "max_tokens"),
        ] {
            let bytes = std::fs::read(format!("{NATIVE_FIX}{file}")).unwrap();
            let (whole, reply) = read_api(api, &bytes, &[]);
            assert_eq!(whole.outcome, Outcome::Success, "{file}");
            assert_eq!(whole.chunks.len(), chunks, "{file}: every token its own event, the closing event no output");
            assert!(whole.chunks.iter().all(|c| c.channel == Channel::Content), "{file}");
            assert_eq!((whole.output_tokens, whole.output_tokens_source), (output, CountSource::Usage), "{file}");
            assert_eq!((whole.input_tokens, whole.input_tokens_source), (prompt, CountSource::Usage), "{file}");
            assert_eq!(whole.counts.usage_cached_prompt, cached, "{file}");
            assert_eq!(whole.finish_reason.as_deref(), Some(finish), "{file}");
            assert!(reply.is_some_and(|r| !r.is_empty()), "{file}");
            if api == Api::LlamaCpp {
                // Each event's running `tokens_predicted` gives each chunk its count.
                assert_eq!(whole.chunk_tokens_source, ChunkTokenSource::ContinuousUsage, "{file}");
                assert!(whole.chunks.iter().all(|c| c.tokens == 1), "{file}");
            }
            for cut in 0..=bytes.len() {
                let (rec, _) = read_api(api, &bytes, &[cut]);
                assert_eq!(rec.outcome, Outcome::Success, "{file} cut at {cut}");
                assert_eq!((rec.output_tokens, rec.input_tokens), (output, prompt), "{file} cut at {cut}");
                assert_eq!(rec.chunks.len(), chunks, "{file} cut at {cut}");
            }
        }
    }

    /// llama.cpp holds back a token that ends inside a UTF-8 character and
    /// sends its text with the next token's: recorded, the second event's
    /// running count rises by 2, and that chunk, not the last, counts 2 tokens.
    #[test]
    fn recorded_llamacpp_held_back_token_counts_on_its_own_chunk() {
        let bytes = std::fs::read(format!("{NATIVE_FIX}completion-stream-utf8.sse")).unwrap();
        for cut in [None, Some(bytes.len() / 3)] {
            let (rec, _) = read_api(Api::LlamaCpp, &bytes, cut.as_slice());
            assert_eq!(rec.outcome, Outcome::Success);
            assert_eq!(rec.output_tokens, 16);
            assert_eq!(rec.chunk_tokens_source, ChunkTokenSource::ContinuousUsage);
            let ks: Vec<u32> = rec.chunks.iter().map(|c| c.tokens).collect();
            assert_eq!(ks, [1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "cut at {cut:?}");
        }
    }

    /// The same server's non-streamed bodies: one chunk, the server's counts.
    #[test]
    fn recorded_llamacpp_native_bodies_are_one_chunk() {
        for (file, api, output, prompt, cached, finish) in [
            ("completion.json", Api::LlamaCpp, 6, 5, Some(4), "limit"),
            ("messages.json", Api::Messages, 5, 11, Some(10), "max_tokens"),
        ] {
            let rec = read_whole(api, &std::fs::read(format!("{NATIVE_FIX}{file}")).unwrap());
            assert_eq!(rec.outcome, Outcome::Success, "{file}");
            assert_eq!(rec.chunks.len(), 1, "{file}");
            assert_eq!((rec.output_tokens, rec.output_tokens_source), (output, CountSource::Usage), "{file}");
            assert_eq!((rec.input_tokens, rec.counts.usage_cached_prompt), (prompt, cached), "{file}");
            assert_eq!(rec.finish_reason.as_deref(), Some(finish), "{file}");
        }
    }

    #[test]
    fn tokenizer_counts_when_usage_is_absent() {
        let tok = TokenCounter::from_file(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tiny-bpe-tokenizer.json"
        )))
        .unwrap();
        let s = b"data: {\"choices\":[{\"delta\":{\"content\":\"the\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" other\"}}]}\n\ndata: [DONE]\n\n";
        let mut r = ResponseReader::new(true);
        r.feed(s, ReadStamp { t: Duration::from_millis(1), ..Default::default() });
        r.end_of_stream(Duration::from_millis(2));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, Some(&tok), &PromptBody::Text("and of".into()));
        assert_eq!((rec.output_tokens, rec.output_tokens_source), (4, CountSource::Tokenizer));
        assert_eq!(rec.chunk_tokens_source, ChunkTokenSource::Tokenizer);
        assert_eq!(rec.chunks.iter().map(|c| c.tokens).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!((rec.input_tokens, rec.input_tokens_source), (2, CountSource::Tokenizer));
    }

    /// "the", " ot", "her": counted apart 1 + 2 + 3 tokens, in context 4.
    fn split_word_with_usage(completion_tokens: u64) -> RequestRecord {
        let tok = TokenCounter::from_file(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tiny-bpe-tokenizer.json"
        )))
        .unwrap();
        let mut s = String::new();
        for text in ["the", " ot", "her"] {
            s += &format!("data: {{\"choices\":[{{\"text\":\"{text}\"}}]}}\n\n");
        }
        s += &format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":2,\"completion_tokens\":{completion_tokens}}}}}\n\ndata: [DONE]\n\n");
        let mut r = ResponseReader::new(true).for_api(Api::Completions);
        r.feed(s.as_bytes(), ReadStamp { t: Duration::from_millis(1), ..Default::default() });
        r.end_of_stream(Duration::from_millis(2));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, Some(&tok), &PromptBody::Text("and of".into()));
        assert_eq!(rec.outcome, Outcome::Success);
        assert_eq!((rec.output_tokens, rec.counts.tokenizer_completion), (completion_tokens, Some(4)));
        rec
    }

    #[test]
    fn chunk_counts_are_counted_in_context_and_add_up_to_usage() {
        let ks = |r: &RequestRecord| r.chunks.iter().map(|c| c.tokens).collect::<Vec<_>>();
        // The server's count agrees: the in-context counts, not 1 + 2 + 3.
        let rec = split_word_with_usage(4);
        assert_eq!((ks(&rec), rec.chunk_tokens_source), (vec![1, 2, 1], ChunkTokenSource::Tokenizer));
        // One more (an end-of-sequence token): shared out in proportion.
        let rec = split_word_with_usage(5);
        assert_eq!((ks(&rec), rec.chunk_tokens_source), (vec![1, 3, 1], ChunkTokenSource::Apportioned));
        // Clearly another model's tokenizer: spread evenly.
        let rec = split_word_with_usage(30);
        assert_eq!((ks(&rec), rec.chunk_tokens_source), (vec![10, 10, 10], ChunkTokenSource::Even));
    }

    #[test]
    fn a_usage_that_counts_fewer_tokens_than_the_chunks_is_not_taken() {
        let stream = |usage: u64| {
            let mut b = String::new();
            for i in 0..5 {
                b += &format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"t{i} \"}}}}]}}\n\n");
            }
            b += &format!(
                "data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":4,\"completion_tokens\":{usage}}}}}\n\n"
            );
            b + "data: [DONE]\n\n"
        };
        // Fewer than the five chunks: counted from the chunks; as many or
        // more (several tokens a chunk): the usage.
        for (usage, out, source) in [
            (0, 5, CountSource::Chunks),
            (2, 5, CountSource::Chunks),
            (5, 5, CountSource::Usage),
            (9, 9, CountSource::Usage),
        ] {
            let rec = read(stream(usage).as_bytes(), &[]);
            assert_eq!(rec.outcome, Outcome::Success, "usage {usage}");
            assert_eq!((rec.output_tokens, rec.output_tokens_source), (out, source), "usage {usage}");
            assert_eq!(rec.counts.usage_completion, Some(usage), "the server's count is kept");
            assert_eq!(rec.input_tokens, 4, "the prompt's count is taken");
        }
    }

    #[test]
    fn an_sse_stream_where_one_json_body_was_due_is_named() {
        let mut r = ResponseReader::new(false);
        let body = b"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";
        r.whole_body(body, Duration::from_millis(5));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        let Outcome::Failed { kind, message } = rec.outcome else { panic!("{:?}", rec.outcome) };
        assert_eq!(kind, FailureKind::InvalidResponse);
        assert!(message.starts_with("the response body is an SSE event stream (it starts with `data:`)"), "{message}");
        assert!(
            message.contains(r#"starts "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n""#),
            "{message}"
        );
        assert!(message.contains("--no-stream") && !message.contains("line 1 column 1"), "{message}");
        // A request that asked for a stream: the label is the fault, and
        // --no-stream is not named (it was not given).
        let mut r = ResponseReader::new(false).streamed(true);
        r.whole_body(body, Duration::from_millis(5));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        let Outcome::Failed { message, .. } = rec.outcome else { panic!("{:?}", rec.outcome) };
        assert!(
            message.contains("labels its stream application/json") && !message.contains("--no-stream"),
            "{message}"
        );
        // Malformed JSON that is no stream keeps serde's words.
        let mut r = ResponseReader::new(false);
        r.whole_body(b"{oops", Duration::from_millis(5));
        let mut rec = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.into_record(&mut rec, None, &PromptBody::Text(String::new()));
        assert!(matches!(&rec.outcome, Outcome::Failed { message, .. } if message.starts_with("malformed JSON")));
    }

    /// A stream of another API's dialect: the failure says none of its
    /// payloads was the API's, and which `--api` reads them (it had said
    /// only "no output (finish reason: none)").
    #[test]
    fn another_apis_stream_names_the_api_that_reads_it() {
        let chat = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
            data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Paris\"}}]}\n\n\
            data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        for api in [Api::Tgi, Api::LlamaCpp] {
            let (rec, _) = read_api(api, chat, &[]);
            let Outcome::Failed { kind, message } = &rec.outcome else { panic!("{api:?}: {:?}", rec.outcome) };
            assert_eq!(*kind, FailureKind::EmptyOutput, "{api:?}: {message}");
            assert!(message.contains("none of the 3 payloads the server sent is in --api"), "{api:?}: {message}");
            assert!(message.contains("--api chat or --api completions"), "{api:?}: {message}");
        }
        // llama.cpp's stream read as TGI's: it has no end TGI knows.
        let llamacpp = b"data: {\"content\":\"Paris\",\"stop\":false}\n\n\
            data: {\"content\":\"\",\"stop\":true,\"stop_type\":\"eos\",\"tokens_predicted\":1}\n\n";
        let (rec, _) = read_api(Api::Tgi, llamacpp, &[]);
        let Outcome::Failed { message, .. } = &rec.outcome else { panic!("{:?}", rec.outcome) };
        assert!(message.contains("in --api tgi's shape: it reads as --api llamacpp"), "{message}");
        // Only a [DONE], which no native API sends.
        let (rec, _) = read_api(Api::Tgi, b"data: [DONE]\n\n", &[]);
        let Outcome::Failed { message, .. } = &rec.outcome else { panic!("{:?}", rec.outcome) };
        assert!(message.contains("--api chat or --api completions"), "{message}");
        // The API's own answer, empty, says nothing of other APIs.
        let empty = b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
        let Outcome::Failed { message, .. } = read_api(Api::Chat, empty, &[]).0.outcome else { panic!() };
        assert!(!message.contains("--api"), "{message}");
    }
}
