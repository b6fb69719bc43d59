//! The server side of the protocols, shared by every simulated backend:
//! OpenAI's chat and completions, and the native APIs beside them
//! (Anthropic Messages; Ollama's `/api/chat` and `/api/generate`, whose
//! streams are newline-delimited JSON). Request bodies, streamed chunk and
//! whole-response JSON, error bodies, and the deterministic words that
//! stand for tokens.
//!
//! One file per job: `route` (which protocol), `request` (parsing bodies),
//! `tokens` (the word tokenizer), `usage` (token counts), `chunks`
//! (streamed and whole responses), `bodies` (errors and listings).

mod bodies;
mod chunks;
pub mod fields;
pub mod images;
pub mod pooling;
mod request;
mod route;
pub(crate) use route::openai_unknown_model;
mod usage;

pub use bodies::{error_response, info_body, models_body, tags_body, unix_now};
pub use chunks::ChunkWriter;
pub use request::{GenerationRequest, OllamaOptions, RequestError, StreamOptions, TgiParameters};
pub use route::{error_body, Route};
// The simulator's tokenizer lives beneath both this front and the chat
// templates (crate::tokens); its names stay reachable here.
pub use crate::tokens::{count_tokens, output_ids, token_id, token_ids, word};
pub use usage::Usage;

#[cfg(test)]
mod tests;
