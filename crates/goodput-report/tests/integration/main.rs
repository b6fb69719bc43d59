//! The integration tests of goodput-report, gathered in one test binary (one link of
//! its dependencies, not one per file): each file here is a module, and
//! `cargo test -p goodput-report --test integration <module>::` runs one of them.

mod common;

mod browser;
mod compare;
mod exporters;
mod peers;
mod repeats;
mod schema;
