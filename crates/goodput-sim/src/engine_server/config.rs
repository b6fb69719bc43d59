//! What defines one engine server, and the checks on its own settings.

use crate::engine::{EngineConfig, Error};
use crate::faults::FaultConfig;

/// The slowest the engine may run against real time.
const MIN_SPEED: f64 = 1e-3;

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
                "--speed {} must be a finite positive number (1 is real time, 2 twice as fast)",
                self.speed
            )));
        }
        // Every step, front-end delay and stall lasts 1/speed of its length
        // on the wall clock: a speed of 1e-300 overflowed them (a panic).
        if self.speed < MIN_SPEED {
            return Err(Error::InvalidConfig(format!(
                "--speed {:e} stretches every step of the engine beyond any clock: give at least {MIN_SPEED} (a \
                 thousand times slower than real time)",
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
        self.faults.validate().map_err(|e| Error::InvalidConfig(e.to_string()))
    }

    /// Every name the server answers to, the base model's first.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.model_name.as_str()).chain(self.more_model_names.iter().map(String::as_str))
    }
}
