//! The running server's handle: builds the engine, spawns its driver, and
//! answers for its state.

use super::config::EngineServerConfig;
use super::driver::Driver;
use super::metrics::{lock, Observed};
use super::progress::Command;
use crate::engine::{Engine, EngineStats, Error, KvCapacity, Prompt, Router};
use crate::faults::FaultCounters;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// A running engine server: the handle the HTTP routes share with the
/// driver task that owns the engine.
pub struct EngineServer {
    pub(super) cfg: EngineServerConfig,
    pub(super) counters: FaultCounters,
    /// One driver per data-parallel replica, and the router in front of them.
    /// Disaggregated, the prefill instances' drivers come first, and the
    /// router picks among the decode instances.
    pub(super) commands: Vec<mpsc::UnboundedSender<Command>>,
    pub(super) router: Arc<Mutex<Router>>,
    pub(super) pd: Option<super::disagg::PrefillPool>,
    observed: Vec<Arc<Mutex<Observed>>>,
    /// The front end's delay on the wall clock.
    pub(super) frontend: Duration,
    /// When the front end's serial work (`frontend_serial_us`) for the
    /// requests so far ends.
    pub(super) frontend_free: Mutex<tokio::time::Instant>,
    /// When the server started: a polled router's polls are due at its
    /// multiples of the poll's interval, on the engine's clock.
    started: tokio::time::Instant,
    /// The GPUs' energy counters at the last scrape (joules each, at the
    /// engine's elapsed time): the power DCGM reports is the mean since.
    power_seen: Mutex<Option<super::metrics::EnergySeen>>,
    capacity: KvCapacity,
    /// The most tokens one request may hold there (one attention rank's).
    request_kv_tokens: u64,
    max_num_seqs: u32,
}

impl std::fmt::Debug for EngineServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineServer").field("cfg", &self.cfg).finish_non_exhaustive()
    }
}

impl EngineServer {
    /// Builds the engine (one per data-parallel replica) and spawns each
    /// one's driver on the current tokio runtime. The drivers stop once the
    /// server and every response are dropped.
    pub fn start(cfg: EngineServerConfig) -> Result<Arc<EngineServer>, Error> {
        cfg.validate()?;
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|_| Error::InvalidConfig("the engine server must be started inside a tokio runtime".into()))?;
        let mut engines = cfg.engine.engine_configs().into_iter().map(Engine::new).collect::<Result<Vec<_>, _>>()?;
        let pd = match (cfg.engine.pd, crate::engine::KvLink::new(&cfg.engine)) {
            (Some(pd), Some(link)) => Some(super::disagg::PrefillPool::new(
                link,
                pd.prefill as usize,
                &engines[0],
                cfg.engine.router,
                cfg.speed,
            )),
            _ => None,
        };
        let prefill = pd.as_ref().map_or(0, |p| p.prefill);
        // The instances that serve responses (the decode pool's, when
        // disaggregated) give the server's cache and sequence cap.
        let (capacity, max_num_seqs) = (*engines[prefill].capacity(), engines[prefill].max_num_seqs());
        let request_kv_tokens = engines[prefill].request_kv_tokens();
        for e in &mut engines[..prefill] {
            e.hold_finished();
        }
        let router = Router::new(cfg.engine.router, engines.len() - prefill, capacity.num_blocks)
            .polled(cfg.engine.router_poll_s)
            .controlled(cfg.engine.dense_controller());
        // SGLang's controller reads the loads the replicas publish, vLLM's
        // front end their counts.
        if let Some(by) = router.reads_published() {
            engines.iter_mut().for_each(|e| e.publish_loads(by));
        }
        let mut commands = Vec::new();
        let mut observed = Vec::new();
        let mut drivers = Vec::new();
        for (i, engine) in engines.into_iter().enumerate() {
            // The router polls the replicas it routes to, if it polls.
            let o = Arc::new(Mutex::new(Observed::new(&engine, router.polls() && i >= prefill)));
            let (tx, rx) = mpsc::unbounded_channel();
            commands.push(tx);
            observed.push(o.clone());
            // SGLang's prefill instances send each chunk's KV as it ends.
            let chunks = pd.as_ref().filter(|_| i < prefill && cfg.engine.decode_first()).map(|p| p.link(i));
            drivers.push(Driver::new(engine, rx, o, cfg.speed, i < prefill).sending_chunks(chunks));
        }
        let server = Arc::new(EngineServer {
            frontend: cfg.engine.calibration.frontend_overhead().div_f64(cfg.speed),
            frontend_free: Mutex::new(tokio::time::Instant::now()),
            started: tokio::time::Instant::now(),
            power_seen: Mutex::new(None),
            capacity,
            request_kv_tokens,
            max_num_seqs,
            counters: FaultCounters::default(),
            commands,
            router: Arc::new(Mutex::new(router)),
            pd,
            observed,
            cfg,
        });
        for driver in drivers {
            runtime.spawn(driver.run());
        }
        Ok(server)
    }

    /// The replica a request with this prompt goes to, counted in flight
    /// there until its ticket is dropped, and that replica's driver.
    pub(super) fn route(&self, prompt: &Prompt) -> (usize, mpsc::UnboundedSender<Command>) {
        let now_s = self.started.elapsed().as_secs_f64() * self.cfg.speed;
        let (offset, observed) = (self.decode_offset(), &self.observed);
        let load = |i: usize| observed.get(offset + i).and_then(|o| lock(o).load_tokens).unwrap_or(0);
        let published = |i: usize| observed.get(offset + i).and_then(|o| lock(o).published).unwrap_or_default();
        let replica = lock(&self.router).route_with(prompt, now_s, load, published);
        (replica, self.commands[offset + replica].clone())
    }

    /// Disaggregated, the first decode instance's index among the drivers.
    fn decode_offset(&self) -> usize {
        self.pd.as_ref().map_or(0, |p| p.prefill)
    }

    /// A KV transfer that landed on decode instance `replica`, for vLLM's
    /// NIXL histogram.
    pub(super) fn observe_kv_transfer(&self, replica: usize, took: Duration) {
        if let Some(o) = self.observed.get(self.decode_offset() + replica) {
            lock(o).kv_xfer.observe(took);
        }
    }

    /// Empties every replica's prefix cache (vLLM's `POST
    /// /reset_prefix_cache`); gives how many cached prefixes were forgotten.
    /// Requests under way keep their blocks, but no later request finds a
    /// prefix cached before the reset. `None` when a replica's engine has
    /// stopped.
    pub async fn reset_prefix_cache(&self) -> Option<usize> {
        let mut forgotten = 0;
        for c in &self.commands {
            let (tx, rx) = tokio::sync::oneshot::channel();
            c.send(Command::ResetPrefixCache(tx)).ok()?;
            forgotten += rx.await.ok()?;
        }
        Some(forgotten)
    }

    pub fn config(&self) -> &EngineServerConfig {
        &self.cfg
    }

    /// The KV cache of one replica of the engine, as sized at start.
    pub fn capacity(&self) -> &KvCapacity {
        &self.capacity
    }

    /// The most tokens one request may hold: one attention rank's cache
    /// ([`crate::engine::Engine::request_kv_tokens`]).
    pub fn request_kv_tokens(&self) -> u64 {
        self.request_kv_tokens
    }

    pub fn max_num_seqs(&self) -> u32 {
        self.max_num_seqs
    }

    /// The engine's counters and gauges as of its last step or command,
    /// summed over its data-parallel replicas.
    pub fn stats(&self) -> EngineStats {
        EngineStats::summed(self.observed.iter().map(|o| lock(o).engine.clone()))
    }

    /// Each data-parallel replica's counters and gauges.
    pub fn replica_stats(&self) -> Vec<EngineStats> {
        self.observed.iter().map(|o| lock(o).engine.clone()).collect()
    }

    pub fn counters(&self) -> &FaultCounters {
        &self.counters
    }

    /// The `/metrics` body: Prometheus text format 0.0.4.
    /// When request `n`, arrived at `arrived` with `prompt_tokens`, reaches
    /// the scheduler: the front end's share of the latency (HTTP, parsing,
    /// tokenising, in a real server) first. With `frontend_jitter_ms` each
    /// request's share varies with its number; with `frontend_serial_us`
    /// (and `more_serial`, an image encoder's work), a request waits for the
    /// front end's work on those before it (as in virtual time: see
    /// `VirtualRun::send`).
    pub(super) fn front_end_reach(
        &self,
        n: u64,
        arrived: tokio::time::Instant,
        prompt_tokens: u64,
        more_serial: Duration,
    ) -> tokio::time::Instant {
        let calibration = &self.cfg.engine.calibration;
        let frontend = if calibration.frontend_jitter_ms > 0.0 {
            calibration.frontend_delay(n, 0).div_f64(self.cfg.speed)
        } else {
            self.frontend
        };
        let serial = calibration.frontend_serial(prompt_tokens).div_f64(self.cfg.speed) + more_serial;
        if serial.is_zero() {
            return arrived + frontend;
        }
        let start = crate::engine::serial_start(&mut *lock(&self.frontend_free), arrived, serial);
        start + serial.max(frontend)
    }

    /// When the front end has streamed `tokens` more output tokens
    /// (`frontend_serial_us_per_output_token`), one at a time with its other
    /// serial work: a chunk waits for the work on those before it, every
    /// stream's (as in virtual time: see `VirtualRun::record_step`). `None`
    /// when the front end spends nothing a token.
    pub(super) fn front_end_output(&self, tokens: u64) -> Option<tokio::time::Instant> {
        let work = self.cfg.engine.calibration.frontend_output(tokens).div_f64(self.cfg.speed);
        if work.is_zero() {
            return None;
        }
        let start = crate::engine::serial_start(&mut *lock(&self.frontend_free), tokio::time::Instant::now(), work);
        Some(start + work)
    }

    pub fn prometheus(&self) -> String {
        let all: Vec<Observed> = self.observed.iter().map(|o| lock(o).clone()).collect();
        let spec = self.cfg.engine.spec.map(|sd| sd.tokens);
        let mut s = super::metrics::prometheus(&all, &self.cfg.model_name, spec, self.pd.as_ref().map(|p| p.prefill));
        s.push_str(&self.counters.prometheus(&self.cfg.faults));
        s.push_str(&self.cfg.engine.parallel_info_metric());
        s.push_str(&super::metrics::speed_metric(self.cfg.speed));
        s.push_str(&super::metrics::cache_config_info(&all, &self.cfg.engine));
        let elapsed = self.started.elapsed().mul_f64(self.cfg.speed);
        let mut seen = lock(&self.power_seen);
        s.push_str(&super::metrics::dcgm(&all, elapsed, self.cfg.speed, &self.cfg.engine.gpu.name, &mut seen));
        s
    }
}
