//! Server signals, the pure half: Prometheus text parsed into families
//! ([`parse`]) and the histogram arithmetic on them ([`histogram`]). No I/O:
//! the scraping loop that fetches `/metrics` and stamps each scrape on the
//! run clock lives elsewhere.

pub mod histogram;
pub mod parse;

pub use histogram::{histogram_quantile, Bucket, Histogram};
pub use parse::{parse, Family, Labels, MetricType, ParseError, ParseErrorKind, Sample, Scrape};
