//! goodput-load: everything that puts load on a server and records what came
//! back: workloads, arrival schedules, the OpenAI-compatible streaming client
//! and the runner that turns a load plan into per-request records.

pub mod client;
pub mod error;
pub mod http1;
pub mod lengths;
pub mod ndjson;
pub mod protocol;
pub mod reader;
pub mod runner;
pub mod schedule;
pub mod scraper;
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
