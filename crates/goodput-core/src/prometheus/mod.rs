//! Prometheus text, both ways: the server's `/metrics` parsed, mapped to
//! signals and diagnosed ([`scrape`]), and goodput's own client-side metrics
//! rendered for `--prometheus-listen` ([`live`]).

pub mod live;
pub mod scrape;
