//! The fixed-timing profile of `goodput serve`: every stream takes exactly
//! `ttft` to its first output chunk and then one chunk of `tokens_per_chunk`
//! tokens every `itl`, with the quirks real servers have (a role-only chunk
//! and an empty delta first, usage in its own chunk, `[DONE]`). It is the
//! instrument that tests and benchmarks of the client are read against.
//!
//! It is served by a small HTTP/1.1 server of its own (`fixed/http.rs`)
//! rather than axum: at a thousand lockstep streams a hyper dispatch and a
//! tokio task wake per chunk cost more than the chunk itself and scatter the
//! chunks of one instant in a different order every time. Instead one emitter
//! thread (`fixed/emitter.rs`) owns the timing and the socket writes of every
//! stream, so a chunk costs one `send(2)` and each stream keeps its place in
//! a burst.

mod emitter;
mod http;

pub use http::{serve, serve_limited};

use crate::faults::{Fault, FaultConfig, FaultCounters, FaultError};
use crate::openai::{unix_now, ChunkWriter, GenerationRequest, Route};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The timings and shape of every response.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedProfile {
    pub model: String,
    /// The names it answers to besides `model`, listed after it. When any
    /// are given (`serve --served-model-name a,b`), a request naming
    /// another model is refused with 404, as vLLM refuses it; when none,
    /// the profile answers to any name.
    pub also: Vec<String>,
    /// Whether a request must name one of `model` and `also`.
    pub strict_names: bool,
    /// Request arrival to the first output chunk.
    pub ttft: Duration,
    /// Between output chunks.
    pub itl: Duration,
    pub tokens_per_chunk: u32,
    /// Output length when a request gives no `max_tokens`.
    pub default_max_tokens: u32,
    /// Every n-th request (by arrival, the first included) waits this much
    /// longer for its first chunk: a known tail for goodput tests.
    pub slow_every: Option<(u64, Duration)>,
    /// Each request's first chunk waits a further share of this, drawn
    /// uniform in [0, 1) from `jitter_seed` and the request's arrival
    /// number: a noisy TTFT whose spread is known, the same every run.
    pub ttft_jitter: Duration,
    pub jitter_seed: u64,
    pub faults: FaultConfig,
}

impl FixedProfile {
    /// Every name it serves, `model` first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.model.as_str()).chain(self.also.iter().map(String::as_str))
    }

    /// The 404 message for a request naming `name`, where the profile
    /// serves only its own names and `name` is not one.
    fn unknown(&self, route_names_model: bool, name: Option<&str>) -> Option<String> {
        let name = name.filter(|_| self.strict_names && route_names_model)?;
        (!self.names().any(|n| n == name)).then(|| name.to_owned())
    }
}

impl Default for FixedProfile {
    fn default() -> Self {
        FixedProfile {
            model: "goodput-fixed".into(),
            also: Vec::new(),
            strict_names: false,
            ttft: Duration::from_millis(150),
            itl: Duration::from_millis(20),
            tokens_per_chunk: 2,
            default_max_tokens: 128,
            slow_every: None,
            ttft_jitter: Duration::ZERO,
            jitter_seed: 0,
            faults: FaultConfig::default(),
        }
    }
}

/// A fixed profile that cannot be served.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProfileError {
    #[error("--tokens-per-chunk must be at least 1")]
    TokensPerChunk,
    #[error("--slow-every must be at least 1")]
    SlowEvery,
    #[error(transparent)]
    Fault(#[from] FaultError),
}

impl FixedProfile {
    pub fn validate(&self) -> Result<(), ProfileError> {
        if self.tokens_per_chunk == 0 {
            return Err(ProfileError::TokensPerChunk);
        }
        if self.slow_every.is_some_and(|(n, _)| n == 0) {
            return Err(ProfileError::SlowEvery);
        }
        Ok(self.faults.validate()?)
    }
}

/// The longest answer the fixed profile gives, above the context of any
/// model served today: a whole response is written out in one piece, so a
/// request for billions of tokens would take gigabytes.
pub const MAX_OUTPUT_TOKENS: u32 = 1 << 20;

/// The most messages a chat to the fixed profile may carry, as many as
/// the tokens of the longest context it stands for ([`MAX_OUTPUT_TOKENS`]):
/// every message takes a token at least, and a body of millions of empty
/// messages took gigabytes to parse.
pub const MAX_MESSAGES: u64 = MAX_OUTPUT_TOKENS as u64;

/// Shared state of a fixed-profile server.
#[derive(Debug)]
pub struct FixedServer {
    pub profile: FixedProfile,
    pub counters: FaultCounters,
    /// How late each output chunk left against its exact time: the
    /// instrument's own precision, exposed at /metrics.
    pub lateness: Lateness,
    /// How far each gap between two token chunks of a stream, taken when
    /// their writes began, strays from the exact gap: the server's own
    /// share of any inter-token error a client measures.
    pub gap_error: Lateness,
    /// Where each stream's write times go, when asked for.
    pub(crate) write_log: Option<WriteLog>,
    /// Generation responses planned and not yet ended (see [`Live`]).
    live: Arc<std::sync::atomic::AtomicU64>,
}

/// One generation response in flight, counted in its server's
/// [`FixedServer::live_responses`] until it is dropped with its plan.
pub(crate) struct Live(Arc<std::sync::atomic::AtomicU64>);

impl Live {
    fn new(count: &Arc<std::sync::atomic::AtomicU64>) -> Live {
        count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Live(count.clone())
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl FixedServer {
    pub fn new(profile: FixedProfile) -> Arc<Self> {
        Arc::new(Self::bare(profile))
    }

    /// A server that also logs when each token chunk of every stream was
    /// written, as one JSON line per stream in `path` once the stream ends:
    /// `{"request_id": …, "n": …, "writes_ns": […]}`, the request's
    /// `X-Request-Id` header (bench sends it with `--header
    /// 'X-Request-Id: {request}'`), its arrival number, and each chunk's
    /// write time after the request's arrival. Paired with a client's
    /// records, it splits an inter-token error into the server's share and
    /// the client's.
    pub fn logging_writes(profile: FixedProfile, path: &std::path::Path) -> std::io::Result<Arc<Self>> {
        Ok(Arc::new(FixedServer { write_log: Some(WriteLog::create(path)?), ..Self::bare(profile) }))
    }

    fn bare(profile: FixedProfile) -> Self {
        FixedServer {
            profile,
            counters: FaultCounters::default(),
            lateness: Lateness::default(),
            gap_error: Lateness::default(),
            write_log: None,
            live: Arc::default(),
        }
    }

    /// Generation responses (streamed or whole) in flight now: what a
    /// shutdown waits for.
    pub fn live_responses(&self) -> u64 {
        self.live.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// One stream's token-chunk write times, sent to the log's thread.
pub(crate) struct StreamWrites {
    pub request_id: Option<String>,
    pub n: u64,
    /// Nanoseconds from the request's arrival to each write's start.
    pub writes_ns: Vec<u64>,
}

/// A thread that writes [`StreamWrites`] as JSON lines, each flushed as it
/// comes, so that the emitter only hands a vector over and a killed server
/// leaves every finished stream's line.
#[derive(Debug)]
pub(crate) struct WriteLog {
    tx: std::sync::mpsc::Sender<StreamWrites>,
}

impl WriteLog {
    fn create(path: &std::path::Path) -> std::io::Result<Self> {
        use std::io::Write as _;
        let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let (tx, rx) = std::sync::mpsc::channel::<StreamWrites>();
        std::thread::Builder::new().name("goodput-sim-write-log".into()).spawn(move || {
            for s in rx {
                let line = serde_json::json!({ "request_id": s.request_id, "n": s.n, "writes_ns": s.writes_ns });
                if writeln!(file, "{line}").and_then(|_| file.flush()).is_err() {
                    return;
                }
            }
        })?;
        Ok(WriteLog { tx })
    }

    pub(crate) fn send(&self, writes: StreamWrites) {
        let _ = self.tx.send(writes);
    }
}

/// Each stream's first token-chunk write in the text of a write log (see
/// [`FixedServer::logging_writes`]): milliseconds from the server taking the
/// request to that write's start, by the request's `X-Request-Id`. A line
/// that is not JSON, names no request or logs no write is an error, naming
/// the line.
pub fn first_writes_ms(text: &str) -> Result<std::collections::HashMap<String, f64>, String> {
    text.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).map_err(|e| format!("{e}: {l}"))?;
            match (v["request_id"].as_str(), v["writes_ns"][0].as_u64()) {
                (Some(id), Some(ns)) => Ok((id.to_owned(), ns as f64 / 1e6)),
                _ => Err(format!("no request id or no write: {l}")),
            }
        })
        .collect()
}

/// A histogram of small durations (µs buckets, powers of two): chunk
/// lateness, and gap error.
/// The last slot holds what is past the largest bound (2^23 µs, 8.4 s),
/// counted in `+Inf` alone (it had been counted under that bound).
#[derive(Debug, Default)]
pub struct Lateness {
    buckets: [std::sync::atomic::AtomicU64; BOUNDED + 1],
    /// The sum of every duration recorded, in nanoseconds: the histogram's
    /// `_sum` (a Prometheus histogram has one; it had been left out).
    sum_ns: std::sync::atomic::AtomicU64,
}

/// The bounded buckets of a [`Lateness`]: below 2^0 … 2^23 µs.
const BOUNDED: usize = 24;

impl Lateness {
    pub(crate) fn record(&self, late: Duration) {
        let us = late.as_micros() as u64;
        let i = (64 - us.leading_zeros() as usize).min(BOUNDED);
        self.buckets[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ns = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
        self.sum_ns.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
    }

    /// Chunks that left within `bound` of their time, and all chunks.
    pub fn within(&self, bound: Duration) -> (u64, u64) {
        let mut inside = 0;
        let mut all = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            let n = b.load(std::sync::atomic::Ordering::Relaxed);
            all += n;
            // Bucket i holds lateness below 2^i µs; the last, any beyond.
            if i < BOUNDED && (1u64 << i) <= bound.as_micros() as u64 {
                inside += n;
            }
        }
        (inside, all)
    }

    /// Prometheus text of the histogram as `name`.
    fn prometheus(&self, name: &str, help: &str) -> String {
        let mut o = format!("# HELP {name} {help}\n# TYPE {name} histogram\n");
        let mut cum = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            cum += b.load(std::sync::atomic::Ordering::Relaxed);
            if i < BOUNDED {
                let le = (1u64 << i) as f64 / 1e6;
                o.push_str(&format!("{name}_bucket{{le=\"{le}\"}} {cum}\n"));
            }
        }
        o.push_str(&format!("{name}_bucket{{le=\"+Inf\"}} {cum}\n"));
        let sum = self.sum_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 / 1e9;
        o.push_str(&format!("{name}_sum {sum}\n"));
        o.push_str(&format!("{name}_count {cum}\n"));
        o
    }
}

/// `/metrics`: the fault counters and the two precision histograms.
fn metrics_text(s: &FixedServer) -> String {
    s.counters.prometheus(&s.profile.faults)
        + &s.lateness
            .prometheus("goodput_sim_chunk_lateness_seconds", "How late output chunks left against their exact time.")
        + &s.gap_error.prometheus(
            "goodput_sim_chunk_gap_error_seconds",
            "How far the time between two output chunks of a stream, as written, strayed from the exact gap.",
        )
}

/// What a generation request gets, decided when it arrives.
/// The dimensions of the fixed profile's embeddings.
pub const FIXED_EMBED_DIM: usize = 64;

/// An embeddings or rerank request to the fixed profile: its answer and when
/// it is due (the profile's TTFT after `t0`: the prefill it stands for), or
/// an error's status and message.
fn pool_reply(
    s: &FixedServer,
    route: crate::openai::pooling::PoolRoute,
    body: &[u8],
) -> Result<(Instant, String), (u16, String)> {
    let t0 = Instant::now();
    let req = crate::openai::pooling::PoolRequest::parse(route, body).map_err(|e| (400, e))?;
    let p = &s.profile;
    let (n, fault) = s.counters.next_pooled(&p.faults);
    match fault {
        Fault::HttpError => return Err((500, "injected fault: internal server error".into())),
        Fault::Hostile(crate::faults::Hostile::TooManyRequests) => {
            return Err((429, "injected fault: too many requests".into()))
        }
        Fault::Hostile(crate::faults::Hostile::Unavailable) => {
            return Err((503, "injected fault: service unavailable".into()))
        }
        _ => {}
    }
    if let Some(name) = p.unknown(true, req.model.as_deref()) {
        return Err((404, crate::openai::openai_unknown_model(&name)));
    }
    let ids = req.sequence_ids(crate::template::ChatTemplate::None);
    let model = req.model.as_deref().unwrap_or(&p.model);
    let slow = p.slow_every.filter(|(every, _)| n % every == 0).map_or(Duration::ZERO, |(_, d)| d);
    let stall = match fault {
        Fault::Stall(d) => d,
        _ => Duration::ZERO,
    };
    Ok((t0 + p.ttft + slow + stall, req.answer(model, &ids, FIXED_EMBED_DIM, n).to_string()))
}

enum Reply {
    /// An error status with its message (a bad body, an injected HTTP 500).
    Error(u16, String),
    /// A streamed or whole response timed by `Plan`.
    Generate(Box<Plan>),
}

/// Everything about one generation response, fixed on arrival: its chunks,
/// their exact times, and its fault.
pub(crate) struct Plan {
    writer: ChunkWriter,
    /// The request's arrival number: the fault draw and the output's seed.
    n: u64,
    fault: Fault,
    stream: bool,
    n_out: u64,
    tokens_per_chunk: u64,
    n_chunks: u64,
    prompt_tokens: u64,
    /// `(prompt, completion)` tokens for the usage chunk, when asked for.
    usage: Option<(u64, u64)>,
    t0: Instant,
    /// TTFT, `slow_every`'s extra wait and the jitter included.
    ttft: Duration,
    itl: Duration,
    stall: Duration,
    /// The request's `X-Request-Id`, kept only for the write log.
    request_id: Option<String>,
    /// Counts the response as live until the plan is dropped.
    _live: Live,
}

impl Reply {
    /// Parses `body` for `route`, draws the request's number and fault, and
    /// plans the response of a request that arrived at `t0` (`request_id`:
    /// its `X-Request-Id`, for the write log).
    fn to(s: &FixedServer, route: Route, body: &[u8], t0: Instant, request_id: Option<String>) -> Reply {
        let within = || format!("the fixed profile takes ({MAX_MESSAGES}, above any model's context)");
        if let Err(e) = GenerationRequest::check_messages(body, MAX_MESSAGES, within) {
            return Reply::Error(400, e.to_string());
        }
        let req = match GenerationRequest::parse(route, body) {
            Ok(r) => r,
            Err(e) => return Reply::Error(400, e.to_string()),
        };
        let p = &s.profile;
        if let Some(name) = p.unknown(route.names_model(), req.model.as_deref()) {
            return Reply::Error(404, route.unknown_model(&name));
        }
        let (n, fault) = s.counters.next(&p.faults);
        if fault == Fault::HttpError {
            return Reply::Error(500, "injected fault: internal server error".into());
        }
        let script = p.faults.answers.as_ref().and_then(|a| a.script(&req.prompt_text(), n));
        let asked = req.max_tokens().unwrap_or(p.default_max_tokens);
        if asked > MAX_OUTPUT_TOKENS {
            return Reply::Error(
                400,
                format!(
                    "max_tokens {asked} is more than the fixed profile answers ({MAX_OUTPUT_TOKENS} tokens, \
                     above any model's context); lower max_tokens"
                ),
            );
        }
        let asked = u64::from(asked);
        // A scripted answer ends with its last word, as a model stops at its
        // end: its finish reason is then `stop`, `length` only where
        // `max_tokens` cut it.
        let n_out = script.as_ref().map_or(asked, |s| asked.min(s.len()));
        let ended = script.as_ref().is_some_and(|s| s.len() < asked);
        let k = p.tokens_per_chunk as u64;
        // Counted as the prompt's text would be, without building it.
        let prompt_tokens = req.prompt_words();
        let model = req.model.as_deref().unwrap_or(&p.model);
        let slow = p.slow_every.filter(|(every, _)| n % every == 0).map_or(Duration::ZERO, |(_, d)| d);
        let jitter = p.ttft_jitter.mul_f64(goodput_core::util::hash::unit(p.jitter_seed, n));
        Reply::Generate(Box::new(Plan {
            writer: ChunkWriter::new(route, n, model, unix_now())
                .with_lengths(prompt_tokens, n_out)
                .with_continuous_usage(req.continuous_usage())
                .with_script(script)
                .ending_on_its_own(ended),
            n,
            fault,
            stream: req.stream(),
            n_out,
            tokens_per_chunk: k,
            n_chunks: n_out.div_ceil(k),
            prompt_tokens,
            usage: req.include_usage().then_some((prompt_tokens, n_out)),
            t0,
            ttft: p.ttft + slow + jitter,
            itl: p.itl,
            stall: match fault {
                Fault::Stall(d) => d,
                _ => Duration::ZERO,
            },
            request_id: request_id.filter(|_| s.write_log.is_some()),
            _live: Live::new(&s.live),
        }))
    }
}

impl Plan {
    /// The exact time of token chunk `i`; a stall shifts every chunk from the
    /// middle on.
    fn due(&self, i: u64) -> Instant {
        let stall = if i >= self.n_chunks / 2 { self.stall } else { Duration::ZERO };
        self.t0 + self.ttft + self.itl * i as u32 + stall
    }

    /// The chunk where an injected stream error or disconnect happens.
    fn fault_at(&self) -> u64 {
        self.n_chunks / 2
    }
}

#[cfg(test)]
mod lateness_tests {
    use super::Lateness;
    use std::time::Duration;

    /// A duration past the largest bound is counted in `+Inf` alone (10 s
    /// had been counted under le="8.388608"), and `_sum` adds them all.
    #[test]
    fn a_duration_past_the_largest_bound_is_in_inf_alone_and_the_sum_holds_all() {
        let h = Lateness::default();
        h.record(Duration::from_micros(3));
        h.record(Duration::from_secs(10));
        let text = h.prometheus("x", "help");
        assert!(text.contains("x_bucket{le=\"0.000004\"} 1\n"), "{text}");
        assert!(text.contains("x_bucket{le=\"8.388608\"} 1\n"), "{text}");
        assert!(text.contains("x_bucket{le=\"+Inf\"} 2\n"), "{text}");
        assert!(text.contains("x_sum 10.000003\n") && text.contains("x_count 2\n"), "{text}");
        assert_eq!(h.within(Duration::from_secs(100)), (1, 2));
    }
}
