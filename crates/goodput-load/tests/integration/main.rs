//! The integration tests of goodput-load, gathered in one test binary (one link of
//! its dependencies, not one per file): each file here is a module, and
//! `cargo test -p goodput-load --test integration <module>::` runs one of them.

mod common;

mod chunk_tokens;
mod dialects;
mod fixed_server;
mod floods;
mod hostile;
mod http1;
mod known_timings;
mod native_apis;
