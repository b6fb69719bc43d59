//! goodput-sim: the simulated inference engine (its model of a
//! continuous-batching server) and the OpenAI-compatible HTTP front that
//! serves it, plus the fixed-timing profile used to test clients.

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
