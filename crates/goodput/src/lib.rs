//! The commands of the `goodput` binary, as a library so that its tests and
//! examples drive the same code paths (the estimate's virtual load, above
//! all) rather than copies of them. `main.rs` parses and dispatches. Beside
//! the commands: [`scrape`], the loop that fetches a server's Prometheus
//! endpoints during a run (`signals`) or on its own (`monitor`).

pub mod bench;
pub mod cli;
pub mod common;
pub mod compare;
pub mod config;
pub mod cpu;
pub mod estimate;
pub mod interrupt;
pub mod launch;
pub mod limits;
pub mod measured;
pub mod merge;
pub mod monitor;
pub mod output;
pub mod plan;
pub mod point;
pub mod pooling;
pub mod progress;
pub mod prometheus;
pub mod report;
pub mod runs;
pub mod scrape;
pub mod serve;
pub mod setup;
pub mod shell;
pub mod signals;
pub mod sim_server;
pub mod sweep;
pub mod target;
pub mod until;
pub mod virtual_point;
