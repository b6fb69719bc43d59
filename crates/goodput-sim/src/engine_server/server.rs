//! The running server's handle: builds the engine, spawns its driver, and
//! answers for its state.

use super::config::EngineServerConfig;
use super::driver::Driver;
use super::metrics::{lock, Observed};
use super::progress::Command;
use crate::engine::{Engine, EngineStats, Error, KvCapacity};
use crate::faults::FaultCounters;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;

/// A running engine server: the handle the HTTP routes share with the
/// driver task that owns the engine.
pub struct EngineServer {
    pub(super) cfg: EngineServerConfig,
    pub(super) counters: FaultCounters,
    pub(super) commands: mpsc::UnboundedSender<Command>,
    observed: Arc<Mutex<Observed>>,
    /// The front end's delay on the wall clock.
    pub(super) frontend: Duration,
    /// When the front end's serial work (`frontend_serial_us`) for the
    /// requests so far ends.
    pub(super) frontend_free: Mutex<tokio::time::Instant>,
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
            frontend_free: Mutex::new(tokio::time::Instant::now()),
            capacity: *engine.capacity(),
            max_num_seqs: engine.max_num_seqs(),
            counters: FaultCounters::default(),
            commands,
            observed: observed.clone(),
            cfg,
        });
        let driver = Driver::new(engine, rx, observed, server.cfg.speed);
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
        let mut s = o.prometheus(&self.cfg.model_name);
        s.push_str(&self.counters.prometheus(&self.cfg.faults));
        s
    }
}
