//! The integration tests of goodput, gathered in one test binary (one link of
//! its dependencies, not one per file): each file here is a module, and
//! `cargo test -p goodput --test integration <module>::` runs one of them.

mod cmd;
mod support;

mod answers;
mod cli;
mod cli_words;
mod deploy;
mod engine_metrics;
mod fault_matrix;
mod fit;
mod floods;
mod judge;
mod live_view;
mod outputs;
mod parallel;
mod peers;
mod plan;
mod pooling;
mod quality;
mod readings;
mod rereads;
mod runs;
mod schema;
mod secrets;
mod serve_grid;
mod serve_stop;
mod shards;
mod shell;
mod signals;
mod sim_agreement;
mod stability;
mod starved;
mod storms;
mod until;
mod virtual_runs;
mod warm_cache;
mod workloads;
