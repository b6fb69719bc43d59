//! Server signals, the pure half: Prometheus text parsed into families
//! ([`parse`]), the histogram arithmetic on them ([`histogram`]), engine
//! metrics mapped to common signals ([`signals`]), and summaries over a run
//! window ([`window`]), and the cross-check and diagnoses they support
//! ([`diagnose`]). No I/O: the scraping loop that fetches `/metrics` and
//! stamps each scrape on the run clock is goodput-load's `scraper`. Here, so
//! that every number of a run, the server's included, is recomputed from
//! what the result keeps (`report --window`, a merge of shards).

pub mod diagnose;
pub mod histogram;
pub mod parse;
pub mod signals;
pub mod window;

#[cfg(test)]
mod tests;

pub use diagnose::{cross_check, diagnose, CrossCheck};
pub use histogram::{histogram_quantile, Bucket, Histogram};
pub use parse::{parse, Family, Labels, MetricType, ParseError, ParseErrorKind, Sample, Scrape};
pub use signals::{detect, CounterSignal, GaugeSignal, HistogramSignal, Signals, Source};
pub use window::{
    summarize, summarize_signals, CounterSummary, HistogramSummary, Series, WindowSummary, GAUGE_PERCENTILES,
};
