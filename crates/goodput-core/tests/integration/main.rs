//! The integration tests of goodput-core, gathered in one test binary (one link of
//! its dependencies, not one per file): each file here is a module, and
//! `cargo test -p goodput-core --test integration <module>::` runs one of them.

mod quality;
