//! The engine profile of `goodput serve`: the simulated engine behind the
//! OpenAI-compatible HTTP front, in real time or `speed` times faster. One
//! driver task owns the [`Engine`]; handlers reach it through a command
//! channel and read their tokens from a per-request progress cell. `/metrics`
//! exposes the engine's true state under vLLM's V1 metric names.

use crate::clock::{sleep_until, Sleep};
use crate::engine::{Engine, EngineConfig, EngineStats, Error, KvCapacity, Prompt, StepOutcome};
use crate::faults::{Fault, FaultConfig, FaultCounters};
use crate::openai::{
    error_response, info_body, models_body, output_ids, tags_body, unix_now, ChunkWriter, GenerationRequest, Route,
    Usage,
};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures::task::AtomicWaker;
use futures::Stream;
use std::collections::HashMap;
use std::fmt::Write;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// What defines one engine server.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineServerConfig {
    pub engine: EngineConfig,
    /// The name `/v1/models` lists and `/metrics` labels with.
    pub model_name: String,
    /// Further names it serves the same engine under, as vLLM serves LoRA
    /// adapters beside the base model; `/v1/models` lists them all, and a
    /// request naming another model is refused with 404, as vLLM refuses it.
    pub more_model_names: Vec<String>,
    /// How much faster than real time the engine runs: every step, the front
    /// end's delay and injected stalls last `1 / speed` of their simulated
    /// length on the wall clock.
    pub speed: f64,
    /// Output length when a request gives no `max_tokens`.
    pub default_max_tokens: u32,
    pub faults: FaultConfig,
}

impl EngineServerConfig {
    /// Serves `engine` under its model's name, in real time, with 128 output
    /// tokens for requests that name no length, and no faults.
    pub fn new(engine: EngineConfig) -> EngineServerConfig {
        EngineServerConfig {
            model_name: engine.model.name.clone(),
            more_model_names: Vec::new(),
            engine,
            speed: 1.0,
            default_max_tokens: 128,
            faults: FaultConfig::default(),
        }
    }

    /// Checks the server's own settings; the engine checks its own when built.
    pub fn validate(&self) -> Result<(), Error> {
        if !(self.speed.is_finite() && self.speed > 0.0) {
            return Err(Error::InvalidConfig(format!(
                "--speed {} must be a positive number (1 is real time, 2 twice as fast)",
                self.speed
            )));
        }
        if self.default_max_tokens == 0 {
            return Err(Error::InvalidConfig("--default-max-tokens must be at least 1".into()));
        }
        if self.names().any(str::is_empty) {
            return Err(Error::InvalidConfig("the served model name must not be empty".into()));
        }
        if let Some(h) = self.faults.hostile.first() {
            return Err(Error::InvalidConfig(format!(
                "--fault {} is played by the fixed profile only: add --profile fixed (the engine injects \
                 --fault-error-rate, --fault-stream-error-rate, --fault-disconnect-rate and --fault-stall-rate)",
                h.0
            )));
        }
        self.faults.validate().map_err(Error::InvalidConfig)
    }

    /// Every name the server answers to, the base model's first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.model_name.as_str()).chain(self.more_model_names.iter().map(String::as_str))
    }
}

/// A running engine server: the handle the HTTP routes share with the
/// driver task that owns the engine.
pub struct EngineServer {
    cfg: EngineServerConfig,
    counters: FaultCounters,
    commands: mpsc::UnboundedSender<Command>,
    observed: Arc<Mutex<Observed>>,
    /// The front end's delay on the wall clock.
    frontend: Duration,
    capacity: KvCapacity,
    max_num_seqs: u32,
}

impl std::fmt::Debug for EngineServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineServer").field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

impl EngineServer {
    /// Builds the engine and spawns its driver on the current tokio runtime.
    /// The driver stops once the server and every response are dropped.
    pub fn start(cfg: EngineServerConfig) -> Result<Arc<EngineServer>, Error> {
        cfg.validate()?;
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::InvalidConfig("the engine server must be started inside a tokio runtime".into()))?;
        let engine = Engine::new(cfg.engine.clone())?;
        let observed = Arc::new(Mutex::new(Observed::new(engine.stats())));
        let (commands, rx) = mpsc::unbounded_channel();
        let server = Arc::new(EngineServer {
            frontend: cfg.engine.calibration.frontend_overhead().div_f64(cfg.speed),
            capacity: *engine.capacity(),
            max_num_seqs: engine.max_num_seqs(),
            counters: FaultCounters::default(),
            commands,
            observed: observed.clone(),
            cfg,
        });
        let driver = Driver {
            speed: server.cfg.speed,
            engine,
            commands: rx,
            observed,
            live: HashMap::new(),
            out: StepOutcome::default(),
        };
        runtime.spawn(driver.run());
        Ok(server)
    }

    pub fn config(&self) -> &EngineServerConfig {
        &self.cfg
    }

    /// The engine's KV cache, as sized at start.
    pub fn capacity(&self) -> &KvCapacity {
        &self.capacity
    }

    pub fn max_num_seqs(&self) -> u32 {
        self.max_num_seqs
    }

    /// The engine's counters and gauges as of its last step or command.
    pub fn stats(&self) -> EngineStats {
        lock(&self.observed).engine.clone()
    }

    pub fn counters(&self) -> &FaultCounters {
        &self.counters
    }

    /// The `/metrics` body: Prometheus text format 0.0.4.
    pub fn prometheus(&self) -> String {
        let o = lock(&self.observed).clone();
        let labels = format!("engine=\"0\",model_name=\"{}\"", escape_label(&self.cfg.model_name));
        let mut s = String::with_capacity(12 * 1024);
        let e = &o.engine;
        let gauges = [
            ("vllm:num_requests_running", "Number of requests in model execution batches.", e.running as f64),
            ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", e.waiting as f64),
            ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", e.kv_usage),
        ];
        for (name, help, v) in gauges {
            let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{labels}}} {v}\n");
        }
        let counters = [
            (
                "vllm:prefix_cache_queries_total",
                "Prefix cache queries, in terms of number of queried tokens.",
                e.prefix_cache_queries,
            ),
            (
                "vllm:prefix_cache_hits_total",
                "Prefix cache hits, in terms of number of cached tokens.",
                e.prefix_cache_hits,
            ),
            ("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", e.preemptions),
            ("vllm:prompt_tokens_total", "Number of prefill tokens processed.", e.prompt_tokens),
            ("vllm:generation_tokens_total", "Number of generation tokens processed.", e.generation_tokens),
        ];
        for (name, help, v) in counters {
            let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} counter\n{name}{{{labels}}} {v}\n");
        }
        let name = "vllm:request_success_total";
        let _ = write!(s, "# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter\n");
        // The simulated model never emits end of sequence, so nothing stops.
        for (reason, v) in [("stop", 0), ("length", o.finished_length), ("abort", o.aborted)] {
            let _ = writeln!(s, "{name}{{{labels},finished_reason=\"{reason}\"}} {v}");
        }
        for (h, name, help) in [
            (&o.ttft, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."),
            (&o.itl, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds."),
            (&o.e2e, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."),
            (&o.queue, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."),
        ] {
            h.render(&mut s, name, help, &labels);
        }
        s.push_str(&self.counters.prometheus(&self.cfg.faults));
        s
    }
}

/// The router: the generation routes (OpenAI's, Anthropic Messages,
/// Ollama's), `/v1/models` and `/api/tags`, `/health`, `/metrics`.
pub fn app(state: Arc<EngineServer>) -> Router {
    let mut router = Router::new();
    for route in Route::ALL {
        router = router.route(route.path(), post(move |s: State<Arc<EngineServer>>, b: Bytes| generate(s, route, b)));
    }
    let router = router
        .route(
            "/v1/models",
            get(|State(s): State<Arc<EngineServer>>| async move { Json(models_body(&s.cfg.names().collect::<Vec<_>>())) }),
        )
        .route(
            "/api/tags",
            get(|State(s): State<Arc<EngineServer>>| async move { Json(tags_body(&s.cfg.names().collect::<Vec<_>>())) }),
        )
        .route("/info", get(|State(s): State<Arc<EngineServer>>| async move { Json(info_body(&s.cfg.model_name)) }))
        .route("/health", get(|| async { "ok" }))
        .route(
            "/metrics",
            get(|State(s): State<Arc<EngineServer>>| async move {
                ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], s.prometheus())
            }),
        )
        .with_state(state);
    crate::server::with_server_header(router)
}

async fn generate(State(s): State<Arc<EngineServer>>, route: Route, body: Bytes) -> Response {
    let arrived = Instant::now();
    let req = match GenerationRequest::parse(route, &body) {
        Ok(r) => r,
        Err(msg) => return error_response(route, StatusCode::BAD_REQUEST, &msg),
    };
    // TGI and llama.cpp serve one model and read no name; the others refuse
    // a name they do not serve, as vLLM and Ollama do.
    if let Some(name) = req.model.as_deref().filter(|_| route.names_model()) {
        if !s.cfg.names().any(|n| n == name) {
            return error_response(route, StatusCode::NOT_FOUND, &route.unknown_model(name));
        }
    }
    let (id, fault) = s.counters.next(&s.cfg.faults);
    if fault == Fault::HttpError {
        return error_response(route, StatusCode::INTERNAL_SERVER_ERROR, "injected fault: internal server error");
    }
    // `ignore_eos` and `min_tokens` need nothing: the simulated model never
    // ends early, so every response is exactly `max_tokens` long.
    let n_out = req.max_tokens().unwrap_or(s.cfg.default_max_tokens);
    let ids = req.prompt_ids(s.cfg.engine.chat_template);
    let prompt_tokens = ids.len() as u64;
    let mut prompt = Prompt::from_tokens(&ids, s.cfg.engine.block_size);
    if s.cfg.engine.enable_prefix_caching {
        // The answer's words (see ChunkWriter), so the blocks it fills are cached.
        prompt = prompt.followed_by(&ids, output_ids(id, n_out));
    }
    // Only the block hashes need to live through the wait below.
    drop(ids);

    // The front end's share of the latency (HTTP, parsing, tokenising, in a
    // real server) passes before the scheduler sees the request.
    sleep_until(arrived + s.frontend).await;
    let progress = Arc::new(Progress::default());
    let (reply, answer) = oneshot::channel();
    // Made before the request is sent, so a client gone while it waits for
    // the answer still aborts it: the abort follows the add in the channel.
    let mut ticket = Ticket { id, commands: s.commands.clone(), live: true };
    let add = Command::Add { id, prompt, max_tokens: n_out, arrived, progress: progress.clone(), reply };
    if s.commands.send(add).is_err() {
        return engine_gone(route, &mut ticket);
    }
    match answer.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            ticket.live = false;
            let message = match e {
                Error::InvalidRequest { message, .. } => message,
                other => other.to_string(),
            };
            return error_response(route, StatusCode::BAD_REQUEST, &message);
        }
        Err(_) => return engine_gone(route, &mut ticket),
    }

    let model = req.model.clone().unwrap_or_else(|| s.cfg.model_name.clone());
    let writer = ChunkWriter::new(route, id, &model, unix_now()).with_lengths(prompt_tokens, n_out as u64);
    let fault = match fault {
        Fault::Stall(d) => Fault::Stall(d.div_f64(s.cfg.speed)),
        f => f,
    };
    if !req.stream() {
        return whole(progress, ticket, writer, n_out, prompt_tokens, fault).await;
    }
    let stream = TokenStream {
        progress,
        writer,
        ticket,
        n_out,
        emitted: 0,
        produced: 0,
        half: n_out / 2,
        fault,
        stall: None,
        prompt_tokens,
        usage: req.include_usage(),
        done: false,
    };
    stream_response(route, Body::from_stream(stream))
}

fn engine_gone(route: Route, ticket: &mut Ticket) -> Response {
    ticket.live = false;
    error_response(route, StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped")
}

/// A non-streamed response: waits for the whole output (or, for a fault,
/// for half of it), holding the ticket so a client that leaves aborts.
async fn whole(
    progress: Arc<Progress>,
    mut ticket: Ticket,
    writer: ChunkWriter,
    n_out: u32,
    prompt_tokens: u64,
    fault: Fault,
) -> Response {
    let breaks = matches!(fault, Fault::StreamError | Fault::Disconnect);
    let target = if breaks { n_out / 2 + 1 } else { n_out };
    let mut seen = 0;
    while seen < target {
        match progress.changed(seen).await {
            Update::Produced(p) => seen = p,
            Update::Closed => {
                let route = writer.route();
                return error_response(route, StatusCode::INTERNAL_SERVER_ERROR, "the engine dropped the request");
            }
        }
    }
    if breaks {
        // Dropping the live ticket aborts the rest of the generation.
        return error_response(writer.route(), StatusCode::INTERNAL_SERVER_ERROR, "injected fault: generation failed");
    }
    ticket.live = false;
    if let Fault::Stall(d) = fault {
        sleep_until(Instant::now() + d).await;
    }
    let usage = Usage {
        prompt: prompt_tokens,
        completion: n_out as u64,
        cached: Some(progress.cached.load(Ordering::Acquire) as u64),
    };
    Json(writer.whole(usage, "length")).into_response()
}

/// A streamed response: one SSE chunk per token as the driver delivers it,
/// the role preamble with the first (vLLM writes nothing before it), then
/// the finish chunk, usage and `[DONE]`.
struct TokenStream {
    progress: Arc<Progress>,
    writer: ChunkWriter,
    ticket: Ticket,
    n_out: u32,
    emitted: u32,
    /// Tokens known to exist, as of the last look at `progress`.
    produced: u32,
    /// The token at which a fault strikes.
    half: u32,
    fault: Fault,
    stall: Option<Sleep>,
    prompt_tokens: u64,
    /// The client asked for usage (or the protocol always sends it).
    usage: bool,
    done: bool,
}

impl TokenStream {
    /// The prompt's counts, the prefix cache's share included.
    fn prompt_usage(&self, completion: u64) -> Usage {
        Usage {
            prompt: self.prompt_tokens,
            completion,
            cached: Some(self.progress.cached.load(Ordering::Acquire) as u64),
        }
    }
}

impl Stream for TokenStream {
    type Item = Result<Bytes, std::io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if this.emitted == this.n_out {
            this.done = true;
            this.ticket.live = false;
            let usage = this.usage.then(|| this.prompt_usage(this.n_out as u64));
            let close = this.writer.close("length", usage);
            // TGI says its last word with the last token.
            return Poll::Ready((!close.is_empty()).then_some(Ok(close)));
        }
        if this.produced <= this.emitted {
            match this.progress.poll_changed(this.emitted, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Update::Produced(p)) => this.produced = p,
                Poll::Ready(Update::Closed) => {
                    this.done = true;
                    return Poll::Ready(Some(Ok(this.writer.error_event("the engine dropped the request"))));
                }
            }
        }
        if this.emitted == this.half {
            match this.fault {
                Fault::StreamError => {
                    this.done = true;
                    let ev = this.writer.error_event("injected fault: the engine failed mid-stream");
                    return Poll::Ready(Some(Ok(ev)));
                }
                Fault::Disconnect => {
                    this.done = true;
                    return Poll::Ready(Some(Err(std::io::Error::other("injected disconnect"))));
                }
                Fault::Stall(d) => {
                    let sleep = this.stall.get_or_insert_with(|| sleep_until(Instant::now() + d));
                    if Pin::new(sleep).poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    // Tokens made during the stall go out back to back after it.
                    this.fault = Fault::None;
                }
                // Refused by the engine's configuration (the fixed profile plays them).
                Fault::None | Fault::HttpError | Fault::Hostile(_) => {}
            }
        }
        let i = this.emitted as u64;
        this.emitted += 1;
        let chunk = this.writer.tokens(i, i + 1);
        if i > 0 {
            return Poll::Ready(Some(Ok(chunk)));
        }
        let preamble = this.writer.preamble(this.prompt_usage(0));
        let mut first = Vec::with_capacity(preamble.len() + chunk.len());
        first.extend_from_slice(&preamble);
        first.extend_from_slice(&chunk);
        Poll::Ready(Some(Ok(Bytes::from(first))))
    }
}

/// What handlers ask of the driver.
enum Command {
    Add {
        id: u64,
        prompt: Prompt,
        max_tokens: u32,
        /// When the server received the request: TTFT and e2e count from here.
        arrived: Instant,
        progress: Arc<Progress>,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    Abort(u64),
}

/// A handler's claim on its engine request. Dropped while live (the client
/// went away, or a fault cut the response short), it aborts the request.
struct Ticket {
    id: u64,
    commands: mpsc::UnboundedSender<Command>,
    live: bool,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if self.live {
            let _ = self.commands.send(Command::Abort(self.id));
        }
    }
}

/// One request's output as far as the driver has delivered it. A count and
/// a waker instead of a channel: the driver's delivery is two atomic stores
/// and a wake, and a response that falls behind simply finds several tokens.
#[derive(Default)]
struct Progress {
    produced: AtomicU32,
    /// Prompt tokens the prefix cache served when the request was admitted.
    cached: AtomicU32,
    /// The driver let go of the request: finished, aborted, or gone.
    closed: AtomicBool,
    waker: AtomicWaker,
}

enum Update {
    /// Tokens produced so far, more than the caller had seen.
    Produced(u32),
    /// No more tokens will come.
    Closed,
}

impl Progress {
    fn check(&self, seen: u32) -> Option<Update> {
        // `closed` is read first: the driver stores the last count before it
        // closes, so a closed progress shows its final count.
        let closed = self.closed.load(Ordering::Acquire);
        let produced = self.produced.load(Ordering::Acquire);
        if produced > seen {
            Some(Update::Produced(produced))
        } else if closed {
            Some(Update::Closed)
        } else {
            None
        }
    }

    fn poll_changed(&self, seen: u32, cx: &mut Context<'_>) -> Poll<Update> {
        if let Some(u) = self.check(seen) {
            return Poll::Ready(u);
        }
        self.waker.register(cx.waker());
        match self.check(seen) {
            Some(u) => Poll::Ready(u),
            None => Poll::Pending,
        }
    }

    async fn changed(&self, seen: u32) -> Update {
        std::future::poll_fn(|cx| self.poll_changed(seen, cx)).await
    }
}

/// The driver's end of a [`Progress`]. Dropping it closes the progress, so
/// no response waits on a request the driver no longer holds, whatever the
/// reason (finish, abort, or the driver itself going away).
struct Producer(Arc<Progress>);

impl Producer {
    fn deliver(&self, produced: u32) {
        self.0.produced.store(produced, Ordering::Release);
        self.0.waker.wake();
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.0.closed.store(true, Ordering::Release);
        self.0.waker.wake();
    }
}

/// A request the driver holds, with the wall times its metrics need.
struct Live {
    producer: Producer,
    arrived: Instant,
    /// When the request reached the scheduler.
    reached: Instant,
    queued: Option<Duration>,
    last_token: Option<Instant>,
}

/// How far the driver may fall behind its virtual-to-wall mapping before it
/// forgets the debt. Within it, late steps are caught up (run back to back),
/// so a busy host delays tokens but keeps the simulated timeline, and with it
/// throughput and TPOT; a longer pause (a suspended process) is forgiven
/// rather than replayed as a burst.
const MAX_LAG: Duration = Duration::from_secs(1);

/// The task that owns the engine: steps it, lets each step's duration pass
/// on the wall clock, and delivers the step's tokens.
struct Driver {
    engine: Engine,
    commands: mpsc::UnboundedReceiver<Command>,
    observed: Arc<Mutex<Observed>>,
    speed: f64,
    live: HashMap<u64, Live>,
    out: StepOutcome,
}

impl Driver {
    async fn run(mut self) {
        // Steps are timed on an absolute mapping from virtual time (elapsed
        // since `anchor`) to the wall clock, so the driver's own work between
        // steps and late wake-ups do not add up to drift.
        let mut clock: Option<(Instant, Duration)> = None;
        loop {
            self.drain();
            if !self.engine.has_work() {
                clock = None;
                if !self.idle().await {
                    return;
                }
                continue;
            }
            let now = Instant::now();
            let (anchor, elapsed) = clock.get_or_insert((now, Duration::ZERO));
            let mut start = *anchor + elapsed.div_f64(self.speed);
            if now > start + MAX_LAG {
                (*anchor, *elapsed, start) = (now, Duration::ZERO, now);
            }
            if !self.engine.step_into(&mut self.out) {
                // Work that cannot be scheduled waits for a command to change that.
                clock = None;
                if !self.idle().await {
                    return;
                }
                continue;
            }
            *elapsed += self.out.duration;
            let deadline = *anchor + elapsed.div_f64(self.speed);
            if Instant::now() < deadline {
                sleep_until(deadline).await;
            } else {
                // Catching up: let the streams and handlers run between steps.
                tokio::task::yield_now().await;
            }
            // Aborts that came during the step drop its tokens for those requests.
            self.drain();
            self.deliver(start, Instant::now());
        }
    }

    /// Publishes the state and waits for a command; false when no handle to
    /// the server is left.
    async fn idle(&mut self) -> bool {
        lock(&self.observed).engine = self.engine.stats();
        match self.commands.recv().await {
            Some(c) => {
                self.handle(c);
                true
            }
            None => false,
        }
    }

    fn drain(&mut self) {
        while let Ok(c) = self.commands.try_recv() {
            self.handle(c);
        }
    }

    fn handle(&mut self, c: Command) {
        match c {
            Command::Add { id, prompt, max_tokens, arrived, progress, reply } => {
                let res = self.engine.add_request(id, prompt, max_tokens);
                if res.is_ok() {
                    let live = Live {
                        producer: Producer(progress),
                        arrived,
                        reached: Instant::now(),
                        queued: None,
                        last_token: None,
                    };
                    self.live.insert(id, live);
                }
                // A handler gone meanwhile left a ticket whose abort follows.
                let _ = reply.send(res);
            }
            Command::Abort(id) => {
                if self.live.remove(&id).is_some() {
                    self.engine.abort(id);
                    lock(&self.observed).aborted += 1;
                }
            }
        }
    }

    fn deliver(&mut self, step_start: Instant, now: Instant) {
        let mut obs = lock(&self.observed);
        for id in &self.out.admitted {
            if let Some(l) = self.live.get_mut(id) {
                l.queued = Some(step_start.saturating_duration_since(l.reached));
            }
        }
        for (id, cached) in &self.out.prefix_hits {
            if let Some(l) = self.live.get(id) {
                l.producer.0.cached.store(*cached, Ordering::Release);
            }
        }
        for ev in &self.out.tokens {
            let Some(l) = self.live.get_mut(&ev.id) else {
                continue;
            };
            match l.last_token {
                None => obs.ttft.observe(now - l.arrived),
                Some(t) => obs.itl.observe(now - t),
            }
            l.last_token = Some(now);
            l.producer.deliver(ev.index + 1);
            if ev.finished {
                if let Some(l) = self.live.remove(&ev.id) {
                    obs.e2e.observe(now - l.arrived);
                    obs.queue.observe(l.queued.unwrap_or_default());
                    obs.finished_length += 1;
                }
            }
        }
        obs.engine = self.engine.stats();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `/metrics` reports: the engine's stats and the front's own
/// observations. Latencies are wall-clock seconds, what a client of this
/// server measures, whatever the speed.
#[derive(Debug, Clone)]
struct Observed {
    engine: EngineStats,
    ttft: Histogram,
    itl: Histogram,
    e2e: Histogram,
    queue: Histogram,
    finished_length: u64,
    aborted: u64,
}

impl Observed {
    fn new(engine: EngineStats) -> Observed {
        Observed {
            engine,
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(REQUEST_LATENCY_BUCKETS),
            queue: Histogram::new(REQUEST_LATENCY_BUCKETS),
            finished_length: 0,
            aborted: 0,
        }
    }
}

// vLLM V1's bucket bounds (vllm/v1/metrics/loggers.py), so dashboards and
// quantile estimates read the same as against a real server.
const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
];
const ITL_BUCKETS: &[f64] =
    &[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
];

/// A Prometheus histogram: counts per bucket (not cumulative; the last is
/// `+Inf`), their sum and count.
#[derive(Debug, Clone)]
struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    fn observe(&mut self, d: Duration) {
        let v = d.as_secs_f64();
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    fn render(&self, s: &mut String, name: &str, help: &str, labels: &str) {
        let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} histogram\n");
        let mut cumulative = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c;
            // `{:?}` writes 1.0, not 1, as Python's client does.
            let le = self.bounds.get(i).map_or("+Inf".to_string(), |b| format!("{b:?}"));
            let _ = writeln!(s, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let _ = write!(s, "{name}_sum{{{labels}}} {:?}\n{name}_count{{{labels}}} {}\n", self.sum, self.count);
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// A streamed response around `body`: `text/event-stream`, or NDJSON for Ollama's routes.
fn stream_response(route: Route, body: Body) -> Response {
    let mut r = Response::new(body);
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(route.stream_content_type()));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_are_cumulative_with_vllm_bounds() {
        let mut h = Histogram::new(TTFT_BUCKETS);
        for ms in [0.5, 1.0, 3.0, 50.0, 5_000_000.0] {
            h.observe(Duration::from_secs_f64(ms / 1e3));
        }
        let mut s = String::new();
        h.render(&mut s, "x", "help", "a=\"1\"");
        // A value on a bound falls in that bucket (le is inclusive).
        assert!(s.contains("x_bucket{a=\"1\",le=\"0.001\"} 2\n"), "{s}");
        assert!(s.contains("x_bucket{a=\"1\",le=\"0.005\"} 3\n"), "{s}");
        assert!(s.contains("x_bucket{a=\"1\",le=\"0.06\"} 4\n"), "{s}");
        assert!(s.contains("x_bucket{a=\"1\",le=\"2560.0\"} 4\n"), "{s}");
        assert!(s.contains("x_bucket{a=\"1\",le=\"+Inf\"} 5\n"), "{s}");
        assert!(s.contains("x_count{a=\"1\"} 5\n"), "{s}");
        assert_eq!(s.lines().filter(|l| l.starts_with("x_bucket")).count(), TTFT_BUCKETS.len() + 1);
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn bad_settings_are_errors() {
        let engine = EngineConfig::from_names("llama-3.1-8b", "h100", crate::engine::Precision::Bf16).unwrap();
        let ok = EngineServerConfig::new(engine);
        assert!(ok.validate().is_ok());
        for bad in [
            EngineServerConfig { speed: 0.0, ..ok.clone() },
            EngineServerConfig { speed: f64::NAN, ..ok.clone() },
            EngineServerConfig { default_max_tokens: 0, ..ok.clone() },
            EngineServerConfig { faults: FaultConfig { error_rate: 2.0, ..Default::default() }, ..ok.clone() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        // The hostile cases are the fixed profile's.
        let hostile = FaultConfig { hostile: vec![(crate::faults::Hostile::Trickle, 0.1)], ..Default::default() };
        let err = EngineServerConfig { faults: hostile, ..ok.clone() }.validate().unwrap_err().to_string();
        assert!(err.contains("--fault trickle") && err.contains("--profile fixed"), "{err}");
        // No runtime: an error, not a panic.
        assert!(EngineServer::start(ok).is_err());
    }
}
