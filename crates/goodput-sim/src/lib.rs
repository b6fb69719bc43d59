//! goodput-sim: the simulated inference engine (its model of a
//! continuous-batching server) and the OpenAI-compatible HTTP front that
//! serves it, plus the fixed-timing profile used to test clients.
//!
//! - [`engine`]: the catalog of models and GPUs, the roofline, the
//!   scheduler and KV cache, and virtual time (`engine::virtual_time`),
//!   which sends by goodput-core's load dispatcher on the engine's own
//!   event loop, as the live client does on tokio's.
//! - [`engine_server`], [`openai`], [`connections`]: the engine behind real
//!   HTTP; [`fixed`]: a server of known timing for testing clients.

pub mod answers;
pub mod clock;
pub mod connections;
pub mod engine;
pub mod engine_server;
pub mod faults;
pub mod fixed;
pub mod openai;
pub mod server;
pub mod template;
pub mod tokens;
