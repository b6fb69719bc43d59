//! The integration tests of goodput-sim, gathered in one test binary (one link of
//! its dependencies, not one per file): each file here is a module, and
//! `cargo test -p goodput-sim --test integration <module>::` runs one of them.

mod engine_server;
