//! One request's content, and the per-item generator its draws come from.

use crate::protocol::PromptBody;
use goodput_core::SessionTurn;
use rand::rngs::StdRng;
use rand::SeedableRng;
use std::sync::Arc;

/// One request's content.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkItem {
    pub prompt: PromptBody,
    /// Input tokens the generator meant (exact with a tokenizer).
    pub intended_input_tokens: Option<u64>,
    /// `max_tokens` to send.
    pub max_tokens: Option<u32>,
    /// The session and turn the request is, for headers that name it
    /// (`{session}`), models spread by session, and cancellations picked by
    /// turn.
    pub session: Option<SessionTurn>,
    /// The dataset entry's reference(s), which the answer is scored
    /// against (empty: none).
    pub reference: Arc<[String]>,
    /// Which copy of its prompt this is, when each prompt is sent several
    /// times (`--repeat`).
    pub repeat: Option<u32>,
    /// The images it carries (`--images`).
    pub media: Media,
}

/// Images a request carries, as its record keeps them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Media {
    pub images: u32,
    /// Their encoded bytes (before base64).
    pub image_bytes: u64,
}

pub(super) fn item_rng(seed: u64, i: u64) -> StdRng {
    // Independent streams per item whatever the order of requests.
    StdRng::seed_from_u64(goodput_core::util::hash::draw(seed, i))
}
