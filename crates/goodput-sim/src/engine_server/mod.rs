//! The engine profile of `goodput serve`: the simulated engine behind the
//! OpenAI-compatible HTTP front, in real time or `speed` times faster. One
//! driver task owns the [`Engine`](crate::engine::Engine); handlers reach it
//! through a command channel and read their tokens from a per-request
//! progress cell. `/metrics` exposes the engine's true state under vLLM's V1
//! metric names.
//!
//! One file per job: `config` (the server's settings), `server` (the handle),
//! `http` (router and handler), `stream` (streamed responses), `progress`
//! (what handlers and the driver pass each other), `driver` (the task that
//! owns the engine), `metrics` (`/metrics`).

mod config;
mod disagg;
mod driver;
mod http;
mod metrics;
mod pool;
mod progress;
mod server;
mod stream;

pub use config::EngineServerConfig;
pub use http::app;
pub use server::EngineServer;

#[cfg(test)]
mod tests;
