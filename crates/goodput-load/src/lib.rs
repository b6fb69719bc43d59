//! goodput-load: everything that puts load on a server and records what came
//! back: workloads, arrival schedules, the OpenAI-compatible and native API
//! protocols, the client and the runner that turns a load plan into
//! per-request records.
//!
//! - [`client`]: one reading policy (whole body, stream, error body, failure
//!   kinds, the buffer cap) over the `Wire` trait, whose two stacks are
//!   reqwest and goodput's own HTTP/1.1 transport ([`http1`], with kernel
//!   receive stamps); [`protocol`]: what each API sends and streams.
//! - [`runner`]: the [`runner::LoadPlan`] carried out on tokio's clock by
//!   goodput-core's clock-agnostic dispatcher (`goodput_core::load`), the
//!   same rules the simulated engine's virtual time follows.
//! - [`workload`], [`schedule`], [`trace`]: what is sent and when.
//!
//! Scraping the server's `/metrics` during a run is the goodput binary's
//! (`scrape`).

pub mod client;
pub mod error;
pub mod http1;
pub mod lengths;
pub mod ndjson;
pub mod plan_config;
pub mod protocol;
pub mod reader;
pub mod runner;
pub mod schedule;
pub mod sse;
pub mod tokenizer;
pub mod trace;
pub mod words;
pub mod workload;

pub use client::{Client, ClientConfig, QualityOptions, Transport};
pub use http1::Stamps;
pub use protocol::{Api, BodyOptions, KeyHeader, PromptBody};
pub use runner::{run, run_at, Backend, Control, LoadPlan, RecordSink, RunOutput};
pub use schedule::{Arrival, ArrivalSchedule};
pub use tokenizer::TokenCounter;
pub use workload::{
    Conversation, LengthDist, Lengths, Preset, Sessions, SharedPrefix, ThinkTime, Turns, WorkItem, Workload,
};

/// What the tests of every incremental reader share.
#[cfg(test)]
pub(crate) mod testing {
    /// `bytes` in the pieces that arbitrary `cuts` make (each taken modulo
    /// the length plus one, so any `usize` a property test draws is a place
    /// to cut): in order, and together the whole of `bytes`. A reader fed
    /// these must read what it reads from `bytes` whole.
    pub fn split_at_cuts<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
        let mut at: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        at.extend([0, bytes.len()]);
        at.sort_unstable();
        at.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
    }
}
