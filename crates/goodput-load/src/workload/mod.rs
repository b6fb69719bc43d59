//! What each request asks: synthetic prompts of drawn lengths, or entries of a
//! dataset (JSONL or ShareGPT), with the output length to force. Item `i` is
//! a pure function of the seed and `i`, so a run can be repeated exactly.
//!
//! One file per job: `lengths` (length distributions and presets), `item`
//! (a request's content), `prompts` (synthetic text and shared prefixes),
//! `dataset` (reading datasets), `sessions` (multi-turn conversations),
//! `source` (the [`Workload`] that hands out items).

mod columns;
mod dataset;
mod images;
mod item;
mod lengths;
mod parquet;
mod prompts;
mod sessions;
mod source;

pub use crate::lengths::Lengths;
pub use crate::words::WORDS;
pub use columns::Skip;
pub use columns::DETECTED as DATASET_COLUMNS;
pub use dataset::{
    load_dataset, load_dataset_column, read_dataset, Dataset, DatasetEntry, MAX_DATASET_BYTES, MAX_ENTRIES,
};
pub use images::{parse_size as parse_image_size, DatasetImage, ImageFormat, ImageSpec, IMAGE_COLUMNS, MAX_IMAGES};
pub use item::{Media, WorkItem};
pub use lengths::{seeded_draws, share_past, LengthDist, Preset, MAX_TOKENS};
pub use prompts::SharedPrefix;
pub use sessions::{Conversation, Sessions, ThinkTime, Turns};
pub use source::{repeat_slot, Workload};

#[cfg(test)]
mod tests;
