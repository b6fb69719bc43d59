//! Where prompts come from ([`Workload`]): synthetic, a trace's lengths, or
//! a dataset, and request `i`'s or session `s`'s content from each.

use super::dataset::DatasetEntry;
use super::item::{item_rng, WorkItem};
use super::lengths::LengthDist;
use super::prompts::{block_item, draw_lengths, synthetic_item, synthetic_question, SharedPrefix, QUESTION_SALT};
use crate::error::WorkloadError;
use crate::lengths::Lengths;
use crate::protocol::PromptBody;
use crate::tokenizer::TokenCounter;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::sync::Arc;

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum Workload {
    Synthetic {
        input: LengthDist,
        output: LengthDist,
        seed: u64,
        tokenizer: Option<Arc<TokenCounter>>,
        shared_prefix: Option<SharedPrefix>,
    },
    /// Lengths and prefixes from a trace (its times go to the load plan).
    Trace { entries: Arc<Vec<crate::trace::TraceEntry>>, seed: u64, tokenizer: Option<Arc<TokenCounter>> },
    Dataset {
        entries: Arc<Vec<DatasetEntry>>,
        /// Overrides the entries' own lengths when given.
        output: Option<LengthDist>,
        /// A seeded permutation of the entries, cycled.
        order: Arc<Vec<usize>>,
        seed: u64,
    },
    /// Each prompt of `inner` sent `copies` times (`--repeat`), the copies
    /// `spread` requests apart so they land in different batches: request
    /// `i` is a copy of [`repeat_slot`]'s prompt. Lone requests only.
    Repeated { inner: Box<Workload>, copies: u32, spread: u64 },
    /// `inner`'s requests with synthetic images (`--images`), drawn from
    /// `seed` (lone requests only).
    WithImages { inner: Box<Workload>, images: super::images::ImageSpec, seed: u64 },
}

/// Which prompt request `i` asks, and which copy of it, when each prompt is
/// sent `copies` times `spread` requests apart: the requests go in blocks of
/// `spread · copies`, a block's `spread` prompts once each, then again, …
///
/// ```
/// use goodput_load::workload::repeat_slot;
/// let slots: Vec<_> = (0..6).map(|i| repeat_slot(i, 3, 2)).collect();
/// assert_eq!(slots, [(0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2)]);
/// assert_eq!(repeat_slot(6, 3, 2), (2, 0));
/// ```
pub fn repeat_slot(i: u64, copies: u32, spread: u64) -> (u64, u32) {
    let spread = spread.max(1);
    let block = spread * u64::from(copies.max(1));
    let (b, within) = (i / block, i % block);
    (b * spread + within % spread, (within / spread) as u32)
}

impl Workload {
    pub fn dataset(entries: Vec<DatasetEntry>, output: Option<LengthDist>, seed: u64) -> Self {
        let mut order: Vec<usize> = (0..entries.len()).collect();
        order.shuffle(&mut StdRng::seed_from_u64(seed));
        Workload::Dataset { entries: Arc::new(entries), output, order: Arc::new(order), seed }
    }

    /// The same workload drawn from another seed: other prompts, lengths
    /// and dataset order, the entries shared. A sweep's points each take
    /// one, so that no point's prompts are cached by an earlier one's.
    pub fn with_seed(&self, new: u64) -> Workload {
        match self {
            Workload::Synthetic { input, output, tokenizer, shared_prefix, .. } => Workload::Synthetic {
                input: input.clone(),
                output: output.clone(),
                seed: new,
                tokenizer: tokenizer.clone(),
                shared_prefix: *shared_prefix,
            },
            Workload::Trace { entries, tokenizer, .. } => {
                Workload::Trace { entries: entries.clone(), seed: new, tokenizer: tokenizer.clone() }
            }
            Workload::Dataset { entries, output, .. } => {
                let mut order: Vec<usize> = (0..entries.len()).collect();
                order.shuffle(&mut StdRng::seed_from_u64(new));
                Workload::Dataset {
                    entries: entries.clone(),
                    output: output.clone(),
                    order: Arc::new(order),
                    seed: new,
                }
            }
            Workload::Repeated { inner, copies, spread } => {
                Workload::Repeated { inner: Box::new(inner.with_seed(new)), copies: *copies, spread: *spread }
            }
            Workload::WithImages { inner, images, .. } => {
                Workload::WithImages { inner: Box::new(inner.with_seed(new)), images: *images, seed: new }
            }
        }
    }

    /// The lengths of request `i` (the same draws `item` makes, without
    /// building any text): a dataset entry's prompt as counted when it was
    /// read, `None` when it gives no output length.
    pub fn lengths(&self, i: u64) -> Option<Lengths> {
        match self {
            Workload::Synthetic { input, output, seed, shared_prefix, .. } => {
                Some(draw_lengths(&mut item_rng(*seed, i), input, output, shared_prefix.as_ref()))
            }
            Workload::Trace { entries, .. } => entries.get(i as usize).map(|e| e.lengths),
            // The entry's prompt as counted, and the output `item` asks:
            // none when the entry gives no length and no --output-tokens does.
            Workload::Dataset { entries, output, order, seed } => {
                let e = dataset_entry(entries, order, i);
                let out = match output {
                    Some(d) => Some(d.sample(&mut item_rng(*seed, i))),
                    None => e.max_tokens,
                };
                out.map(|output| Lengths { input: e.prompt_tokens, output, prefix: None })
            }
            Workload::Repeated { inner, copies, spread } => inner.lengths(repeat_slot(i, *copies, *spread).0),
            // The text's lengths; the images' tokens are the server's to count.
            Workload::WithImages { inner, .. } => inner.lengths(i),
        }
    }

    /// A dataset's entries that give no output length (no `max_tokens`, no
    /// answer turn) when no `--output-tokens` gives every request one, and
    /// all its entries: `None` for other workloads, and when every request
    /// has a length.
    pub fn entries_without_length(&self) -> Option<(usize, usize)> {
        match self {
            Workload::Dataset { entries, output: None, .. } => {
                let none = entries.iter().filter(|e| e.max_tokens.is_none()).count();
                (none > 0).then_some((none, entries.len()))
            }
            Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => inner.entries_without_length(),
            _ => None,
        }
    }

    /// Whether the prompts are a dataset's.
    pub fn is_dataset(&self) -> bool {
        match self {
            Workload::Dataset { .. } => true,
            Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => inner.is_dataset(),
            _ => false,
        }
    }

    /// The prefix blocks of trace request `i` (Mooncake's `hash_ids`), each
    /// of [`crate::trace::MOONCAKE_BLOCK_TOKENS`], the last cut to the input.
    pub fn prefix_blocks(&self, i: u64) -> Option<Arc<[u64]>> {
        match self {
            Workload::Trace { entries, .. } => entries.get(i as usize)?.blocks.clone(),
            Workload::Repeated { inner, copies, spread } => inner.prefix_blocks(repeat_slot(i, *copies, *spread).0),
            Workload::WithImages { inner, .. } => inner.prefix_blocks(i),
            _ => None,
        }
    }

    /// Which prompt request `i` sends, where another request may send the
    /// same one: a dataset's entry (its place in the file), sent again
    /// once the run has gone through them all, or the prompt `--repeat`
    /// sends again. `None` where request `i`'s prompt is its own (drawn
    /// for it, a trace's line, or one with images drawn for it). A server's prefix cache serves what it
    /// holds of a prompt sent before.
    pub fn prompt_id(&self, i: u64) -> Option<u64> {
        match self {
            Workload::Dataset { order, .. } => Some(order[(i % order.len() as u64) as usize] as u64),
            Workload::Repeated { inner, copies, spread } => {
                let slot = repeat_slot(i, *copies, *spread).0;
                Some(inner.prompt_id(slot).unwrap_or(slot))
            }
            // Each request's images are drawn for it.
            Workload::Synthetic { .. } | Workload::Trace { .. } | Workload::WithImages { .. } => None,
        }
    }

    /// The question of turn `turn` (0 for the opening one) of session `s`,
    /// alone: a [`Conversation`] puts the history before it. Synthetic
    /// questions carry the shared prefix on the opening turn, if any; a
    /// dataset's are its conversation's human turns.
    pub fn question(&self, s: u64, turn: u32) -> Result<WorkItem, WorkloadError> {
        match self {
            Workload::Synthetic { input, output, seed, tokenizer, shared_prefix } => {
                let (mut rng, l) = synthetic_question(*seed, input, output, shared_prefix.as_ref(), s, turn);
                Ok(synthetic_item(&mut rng, *seed, l, tokenizer.as_deref()))
            }
            Workload::Dataset { entries, output, order, seed } => {
                // Session s holds conversation s of the seeded order, as lone requests take entries.
                let e = dataset_entry(entries, order, s);
                let (prompt, max_tokens) = match turn.checked_sub(1) {
                    None => match &e.prompt {
                        // A session's history is user and assistant turns: its system text opens the first.
                        PromptBody::Text(t) => match &e.system {
                            Some(s) => (format!("{s}{}{t}", crate::protocol::TURN_SEPARATOR), e.max_tokens),
                            None => (t.clone(), e.max_tokens),
                        },
                        _ => return Err(WorkloadError::MessagesAsSession),
                    },
                    Some(k) => e.follow_ups.get(k as usize).cloned().ok_or(WorkloadError::NoMoreQuestions)?,
                };
                let max_tokens = match output {
                    Some(d) => Some(d.sample(&mut item_rng(*seed ^ QUESTION_SALT, s ^ u64::from(turn) << 48))),
                    None => max_tokens,
                };
                Ok(WorkItem {
                    prompt: PromptBody::Text(prompt),
                    intended_input_tokens: None,
                    max_tokens,
                    session: None,
                    reference: if turn == 0 { e.reference.clone().into() } else { Arc::from(Vec::new()) },
                    repeat: None,
                    media: Default::default(),
                })
            }
            Workload::Trace { .. } => Err(WorkloadError::TraceAsSessions),
            Workload::Repeated { .. } => Err(WorkloadError::RepeatAsSessions),
            Workload::WithImages { .. } => Err(WorkloadError::ImagesAsSessions),
        }
    }

    /// The lengths of [`Workload::question`]s (the same draws, without
    /// building any text): a synthetic question's, or a dataset
    /// conversation's question as counted when it was read (the opening
    /// one with its system text) and the answer it got, or the one
    /// `--output-tokens` draws. `None` for a trace, for an entry asked in
    /// chat messages (sent whole, no session), and where a dataset's turn
    /// gives no answer length and no `--output-tokens` does.
    pub fn question_lengths(&self, s: u64, turn: u32) -> Option<Lengths> {
        match self {
            Workload::Synthetic { input, output, seed, shared_prefix, .. } => {
                Some(synthetic_question(*seed, input, output, shared_prefix.as_ref(), s, turn).1)
            }
            Workload::Dataset { entries, output, order, seed } => {
                let e = dataset_entry(entries, order, s);
                let (input, answer) = match turn.checked_sub(1) {
                    None if matches!(e.prompt, PromptBody::Text(_)) => (e.prompt_tokens, e.max_tokens),
                    None => return None,
                    Some(k) => (*e.follow_up_tokens.get(k as usize)?, e.follow_ups.get(k as usize)?.1),
                };
                // The draw `question` makes.
                let output = match output {
                    Some(d) => d.sample(&mut item_rng(*seed ^ QUESTION_SALT, s ^ u64::from(turn) << 48)),
                    None => answer?,
                };
                Some(Lengths { input, output, prefix: None })
            }
            _ => None,
        }
    }

    /// Whether sessions can be held: a dataset must hold conversations of
    /// more than one question.
    pub fn check_sessions(&self) -> Result<(), WorkloadError> {
        match self {
            Workload::Dataset { entries, .. } if entries.iter().all(|e| e.follow_ups.is_empty()) => {
                Err(WorkloadError::NoConversations)
            }
            _ => Ok(()),
        }
    }

    /// The questions session `s` can ask: a dataset conversation's, or
    /// unbounded for synthetic ones.
    pub fn conversation_turns(&self, s: u64) -> Option<u32> {
        match self {
            Workload::Dataset { entries, order, .. } => {
                Some(1 + dataset_entry(entries, order, s).follow_ups.len() as u32)
            }
            _ => None,
        }
    }

    /// Whether building an item takes real work (encoding images), to be
    /// done off the threads that read responses.
    pub fn builds_slowly(&self) -> bool {
        match self {
            Workload::WithImages { .. } => true,
            Workload::Dataset { entries, .. } => entries.iter().any(|e| !e.images.is_empty()),
            Workload::Repeated { inner, .. } => inner.builds_slowly(),
            _ => false,
        }
    }

    /// Whether requests carry images (`--images`, or a dataset's image column).
    pub fn has_images(&self) -> bool {
        self.builds_slowly()
    }

    /// The content of request `i`.
    pub fn item(&self, i: u64) -> WorkItem {
        match self {
            Workload::Synthetic { input, output, seed, tokenizer, shared_prefix } => {
                let mut rng = item_rng(*seed, i);
                let l = draw_lengths(&mut rng, input, output, shared_prefix.as_ref());
                synthetic_item(&mut rng, *seed, l, tokenizer.as_deref())
            }
            Workload::Trace { entries, seed, tokenizer } => {
                // Past the trace's end (never sent by a plan that replays it) the lines cycle.
                let e = &entries[(i % entries.len() as u64) as usize];
                match &e.blocks {
                    Some(blocks) => block_item(&mut item_rng(*seed, i), *seed, e.lengths, blocks, tokenizer.as_deref()),
                    None => synthetic_item(&mut item_rng(*seed, i), *seed, e.lengths, tokenizer.as_deref()),
                }
            }
            Workload::Dataset { entries, output, order, seed } => {
                let e = dataset_entry(entries, order, i);
                let max_tokens = match output {
                    Some(d) => Some(d.sample(&mut item_rng(*seed, i))),
                    None => e.max_tokens,
                };
                // A conversation's system text is a system message: the
                // protocol joins it before the prompt where the API takes one.
                let prompt = match (&e.system, &e.prompt) {
                    (Some(s), PromptBody::Text(t)) => PromptBody::Messages(vec![
                        serde_json::json!({"role": "system", "content": s}),
                        serde_json::json!({"role": "user", "content": t}),
                    ]),
                    _ => e.prompt.clone(),
                };
                let item = WorkItem {
                    prompt,
                    intended_input_tokens: None,
                    max_tokens,
                    session: None,
                    reference: e.reference.clone().into(),
                    repeat: None,
                    media: Default::default(),
                };
                super::images::attach_dataset_images(&e.images, item)
            }
            Workload::Repeated { inner, copies, spread } => {
                let (prompt, copy) = repeat_slot(i, *copies, *spread);
                WorkItem { repeat: Some(copy), ..inner.item(prompt) }
            }
            Workload::WithImages { inner, images, seed } => images.attach(*seed, i, inner.item(i)),
        }
    }
}

/// Entry `i` of a dataset's seeded order, cycled.
fn dataset_entry<'a>(entries: &'a [DatasetEntry], order: &[usize], i: u64) -> &'a DatasetEntry {
    &entries[order[(i % order.len() as u64) as usize]]
}
