//! Synthetic prompts: drawn lengths, shared prefixes, and text of common
//! words made to a token count.

use super::item::{item_rng, WorkItem};
use super::lengths::LengthDist;
use crate::error::WorkloadError;
use crate::lengths::Lengths;
use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use crate::trace::MOONCAKE_BLOCK_TOKENS;
use crate::words::WORDS;
use rand::rngs::StdRng;
use rand::Rng;
use std::sync::Arc;

/// A system prompt shared by a share of requests, placed before each prompt
/// so that servers with prefix caching can reuse its KV blocks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SharedPrefix {
    /// Tokens of the shared prefix, on top of the drawn input length.
    pub tokens: u32,
    /// Share of requests that carry one (0..=1).
    pub ratio: f64,
    /// Distinct prefixes to draw from.
    pub count: u32,
}

impl SharedPrefix {
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if !(0.0..=1.0).contains(&self.ratio) {
            return Err(WorkloadError::SharedPrefixRatio(self.ratio));
        }
        if self.count == 0 {
            return Err(WorkloadError::SharedPrefixes);
        }
        if self.tokens > super::lengths::MAX_TOKENS {
            return Err(WorkloadError::SharedPrefixTokens(self.tokens));
        }
        Ok(())
    }
}

pub(super) const QUESTION_SALT: u64 = 0x0A5C_ED0F_u64;

const PREFIX_SALT: u64 = 0x05EE_D0F5_A4ED_u64;

/// The draws of synthetic question `turn` of session `s`: its lengths (the
/// shared prefix on the opening turn only), and the generator its text
/// comes from.
pub(super) fn synthetic_question(
    seed: u64,
    input: &LengthDist,
    output: &LengthDist,
    shared_prefix: Option<&SharedPrefix>,
    s: u64,
    turn: u32,
) -> (StdRng, Lengths) {
    let session_seed: u64 = item_rng(seed ^ QUESTION_SALT, s).random();
    let mut rng = item_rng(session_seed, u64::from(turn));
    let l = draw_lengths(&mut rng, input, output, shared_prefix.filter(|_| turn == 0));
    (rng, l)
}

/// A synthetic prompt of `l`'s lengths: its shared prefix (the same text for
/// the same prefix id), then text of its own from `rng`.
pub(super) fn synthetic_item(rng: &mut StdRng, seed: u64, l: Lengths, tokenizer: Option<&TokenCounter>) -> WorkItem {
    let unique = l.input - l.prefix.map_or(0, |p| p.1);
    let mut text = match l.prefix {
        Some((id, n)) => {
            let mut prng = item_rng(seed ^ PREFIX_SALT, id);
            let mut t = synthetic_text(&mut prng, n, tokenizer);
            t.push(' ');
            t
        }
        None => String::new(),
    };
    text.push_str(&synthetic_text(rng, unique, tokenizer));
    WorkItem {
        prompt: PromptBody::Text(text),
        intended_input_tokens: Some(l.input as u64),
        max_tokens: Some(l.output),
        session: None,
        reference: Arc::from(Vec::new()),
        repeat: None,
        media: Default::default(),
    }
}

const BLOCK_SALT: u64 = 0xB10C_5A17_u64;

/// A prompt of Mooncake prefix blocks (a trace's `hash_ids`): block `j` is
/// the text drawn for its id from the seed, [`MOONCAKE_BLOCK_TOKENS`] long
/// (the last one cut to what the input leaves), so the same id is the same
/// text in every request and a server's prefix cache sees the reuse the
/// trace records. Input past the blocks is text of the request's own.
pub(super) fn block_item(
    rng: &mut StdRng,
    seed: u64,
    l: Lengths,
    blocks: &[u64],
    tokenizer: Option<&TokenCounter>,
) -> WorkItem {
    let mut parts = Vec::with_capacity(blocks.len() + 1);
    let mut covered = 0u32;
    for (j, &id) in blocks.iter().enumerate() {
        let n = crate::trace::block_len(l.input, j);
        if n == 0 {
            break;
        }
        // Drawn whole and cut, so a partial block opens as its full block does.
        let mut prng = item_rng(seed ^ BLOCK_SALT, id);
        let mut text = synthetic_text(&mut prng, MOONCAKE_BLOCK_TOKENS, tokenizer);
        if n < MOONCAKE_BLOCK_TOKENS {
            text = cut(&text, n, tokenizer);
        }
        parts.push(text);
        covered += n;
    }
    if covered < l.input {
        parts.push(synthetic_text(rng, l.input - covered, tokenizer));
    }
    WorkItem {
        prompt: PromptBody::Text(parts.join(" ")),
        intended_input_tokens: Some(l.input as u64),
        max_tokens: Some(l.output),
        session: None,
        reference: Arc::from(Vec::new()),
        repeat: None,
        media: Default::default(),
    }
}

/// The first `n` tokens of `text`: words without a tokenizer.
fn cut(text: &str, n: u32, tokenizer: Option<&TokenCounter>) -> String {
    match tokenizer.and_then(|t| t.truncate(text, n as usize)) {
        Some(c) => c,
        None => text.split(' ').take(n as usize).collect::<Vec<_>>().join(" "),
    }
}

pub(super) fn draw_lengths(
    rng: &mut StdRng,
    input: &LengthDist,
    output: &LengthDist,
    prefix: Option<&SharedPrefix>,
) -> Lengths {
    let n_in = input.sample(rng);
    let n_out = output.sample(rng);
    let prefix = prefix.filter(|p| p.tokens > 0).and_then(|p| {
        let carries = rng.random::<f64>() < p.ratio;
        let id = rng.random_range(0..p.count) as u64;
        carries.then_some((id, p.tokens))
    });
    Lengths { input: n_in + prefix.map_or(0, |p| p.1), output: n_out, prefix }
}

fn synthetic_text(rng: &mut StdRng, n: u32, tokenizer: Option<&TokenCounter>) -> String {
    let mut words: Vec<&str> = (0..n).map(|_| WORDS[rng.random_range(0..WORDS.len())]).collect();
    let Some(tok) = tokenizer else {
        return words.join(" ");
    };
    // With a tokenizer the length is made exact: add words until long enough,
    // then cut at the n-th token's end. A tokenizer that gives next to no
    // tokens for the words (refused when loaded if it gives none) ends the
    // growing at 64 times the words asked, with the text as long as it got.
    let most = (n as usize).max(8) * 64;
    loop {
        let text = words.join(" ");
        match tok.truncate(&text, n as usize) {
            Some(cut) => return cut,
            None if words.len() >= most => return text,
            None => words.extend((0..n.max(8) / 4).map(|_| WORDS[rng.random_range(0..WORDS.len())])),
        }
    }
}
