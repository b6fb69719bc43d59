//! The fixed-timing profile of `goodput serve`: every stream takes exactly
//! `ttft` to its first output chunk and then one chunk of `tokens_per_chunk`
//! tokens every `itl`, with the quirks real servers have (a role-only chunk
//! and an empty delta first, usage in its own chunk, `[DONE]`). It is the
//! instrument that tests and benchmarks of the client are read against.

use crate::clock::sleep_until;
use crate::faults::{Fault, FaultConfig, FaultCounters};
use crate::openai::{count_tokens, error_response, models_body, unix_now, ChunkWriter, GenerationRequest, Route};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The timings and shape of every response.
#[derive(Debug, Clone, PartialEq)]
pub struct FixedProfile {
    pub model: String,
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
    pub faults: FaultConfig,
}

impl Default for FixedProfile {
    fn default() -> Self {
        FixedProfile {
            model: "goodput-fixed".into(),
            ttft: Duration::from_millis(150),
            itl: Duration::from_millis(20),
            tokens_per_chunk: 2,
            default_max_tokens: 128,
            slow_every: None,
            faults: FaultConfig::default(),
        }
    }
}

impl FixedProfile {
    pub fn validate(&self) -> Result<(), String> {
        if self.tokens_per_chunk == 0 {
            return Err("--tokens-per-chunk must be at least 1".into());
        }
        if self.slow_every.is_some_and(|(n, _)| n == 0) {
            return Err("--slow-every must be at least 1".into());
        }
        self.faults.validate()
    }
}

/// Shared state of a fixed-profile server.
#[derive(Debug)]
pub struct FixedServer {
    pub profile: FixedProfile,
    pub counters: FaultCounters,
    /// How late each output chunk left against its exact time: the
    /// instrument's own precision, exposed at /metrics.
    pub lateness: Lateness,
}

impl FixedServer {
    pub fn new(profile: FixedProfile) -> Arc<Self> {
        Arc::new(FixedServer { profile, counters: FaultCounters::default(), lateness: Lateness::default() })
    }
}

/// A histogram of chunk lateness (µs buckets, powers of two).
#[derive(Debug, Default)]
pub struct Lateness {
    buckets: [std::sync::atomic::AtomicU64; 24],
}

impl Lateness {
    fn record(&self, late: Duration) {
        let us = late.as_micros() as u64;
        let i = (64 - us.leading_zeros() as usize).min(23);
        self.buckets[i].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Chunks that left within `bound` of their time, and all chunks.
    pub fn within(&self, bound: Duration) -> (u64, u64) {
        let mut inside = 0;
        let mut all = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            let n = b.load(std::sync::atomic::Ordering::Relaxed);
            all += n;
            // Bucket i holds lateness below 2^i µs.
            if (1u64 << i) <= bound.as_micros() as u64 {
                inside += n;
            }
        }
        (inside, all)
    }

    fn prometheus(&self) -> String {
        let mut o = String::from(
            "# HELP goodput_sim_chunk_lateness_seconds How late output chunks left against their exact time.\n\
             # TYPE goodput_sim_chunk_lateness_seconds histogram\n",
        );
        let mut cum = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            cum += b.load(std::sync::atomic::Ordering::Relaxed);
            let le = (1u64 << i) as f64 / 1e6;
            o.push_str(&format!("goodput_sim_chunk_lateness_seconds_bucket{{le=\"{le}\"}} {cum}\n"));
        }
        o.push_str(&format!("goodput_sim_chunk_lateness_seconds_bucket{{le=\"+Inf\"}} {cum}\n"));
        o.push_str(&format!("goodput_sim_chunk_lateness_seconds_count {cum}\n"));
        o
    }
}

/// The router: OpenAI routes, `/v1/models`, `/health`, `/metrics`.
pub fn app(state: Arc<FixedServer>) -> Router {
    let router = Router::new()
        .route("/v1/chat/completions", post(|s: State<Arc<FixedServer>>, b: Bytes| generate(s, Route::Chat, b)))
        .route("/v1/completions", post(|s: State<Arc<FixedServer>>, b: Bytes| generate(s, Route::Completions, b)))
        .route(
            "/v1/models",
            get(|State(s): State<Arc<FixedServer>>| async move { Json(models_body(&s.profile.model)) }),
        )
        .route("/health", get(|| async { "ok" }))
        .route(
            "/metrics",
            get(|State(s): State<Arc<FixedServer>>| async move {
                let text = s.counters.prometheus() + &s.lateness.prometheus();
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
            }),
        )
        .with_state(state);
    crate::server::with_server_header(router)
}

async fn generate(State(s): State<Arc<FixedServer>>, route: Route, body: Bytes) -> Response {
    let state = s.clone();
    let t0 = Instant::now();
    let req = match GenerationRequest::parse(route, &body) {
        Ok(r) => r,
        Err(msg) => return error_response(StatusCode::BAD_REQUEST, &msg),
    };
    let p = &s.profile;
    let (n, fault) = s.counters.next(&p.faults);
    if fault == Fault::HttpError {
        return error_response(StatusCode::INTERNAL_SERVER_ERROR, "injected fault: internal server error");
    }
    let n_out = req.max_tokens().unwrap_or(p.default_max_tokens) as u64;
    let k = p.tokens_per_chunk as u64;
    let n_chunks = n_out.div_ceil(k);
    let prompt_tokens = count_tokens(&req.prompt_text());
    let model = req.model.clone().unwrap_or_else(|| p.model.clone());
    let writer = Arc::new(ChunkWriter::new(route, n, &model, unix_now()));
    let stall = match fault {
        Fault::Stall(d) => d,
        _ => Duration::ZERO,
    };
    // The deadline of chunk i; a stall shifts every chunk from the middle on.
    let slow = p.slow_every.filter(|(every, _)| n % every == 0).map_or(Duration::ZERO, |(_, d)| d);
    let (ttft, itl) = (p.ttft + slow, p.itl);
    let due = move |i: u64| t0 + ttft + itl * i as u32 + if i >= n_chunks / 2 { stall } else { Duration::ZERO };

    if !req.stream() {
        if matches!(fault, Fault::StreamError | Fault::Disconnect) {
            sleep_until(due(n_chunks / 2)).await;
            return error_response(StatusCode::INTERNAL_SERVER_ERROR, "injected fault: generation failed");
        }
        sleep_until(due(n_chunks.saturating_sub(1))).await;
        return Json(writer.whole(n_out, prompt_tokens, "length")).into_response();
    }

    let usage = req.include_usage().then_some((prompt_tokens, n_out));
    enum Phase {
        Preamble,
        Tokens(u64),
        Close,
        Done,
    }
    let stream = futures::stream::unfold(Phase::Preamble, move |phase| {
        let writer = writer.clone();
        let state = state.clone();
        async move {
            match phase {
                Phase::Preamble => Some((Ok(writer.preamble()), Phase::Tokens(0))),
                Phase::Tokens(i) if i < n_chunks => {
                    if i == n_chunks / 2 {
                        match fault {
                            Fault::StreamError => {
                                sleep_until(due(i)).await;
                                let ev = writer.error_event("injected fault: the engine failed mid-stream");
                                return Some((Ok(ev), Phase::Done));
                            }
                            Fault::Disconnect => {
                                sleep_until(due(i)).await;
                                return Some((Err(std::io::Error::other("injected disconnect")), Phase::Done));
                            }
                            _ => {}
                        }
                    }
                    sleep_until(due(i)).await;
                    state.lateness.record(Instant::now().saturating_duration_since(due(i)));
                    let chunk = writer.tokens(i * k, ((i + 1) * k).min(n_out));
                    Some((Ok(chunk), Phase::Tokens(i + 1)))
                }
                Phase::Tokens(_) => Some((Ok(writer.close("length", usage)), Phase::Close)),
                Phase::Close | Phase::Done => None,
            }
        }
    });
    sse_response(Body::from_stream(stream))
}

/// A `text/event-stream` response around `body`.
pub fn sse_response(body: Body) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}
