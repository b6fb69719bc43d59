//! Server signals, the pure half: Prometheus text parsed into families
//! ([`parse`]), the histogram arithmetic on them ([`histogram`]), engine
//! metrics mapped to common signals ([`signals`]), and summaries over a run
//! window ([`window`]), and the cross-check and diagnoses they support
//! ([`diagnose`]); what a run keeps of each scrape, bounded ([`fold`]),
//! and of its scrapes over time ([`thin`]). No
//! I/O: the scraping loop that fetches `/metrics` and stamps each scrape on
//! the run clock is the goodput binary's `scrape`. Here, so that every number of a run, the server's included, is recomputed from
//! what the result keeps (`report --window`, a merge of shards).

pub mod diagnose;
pub mod fold;
pub mod histogram;
pub mod parse;
pub mod signals;
pub mod thin;
pub mod values;
pub mod window;

#[cfg(test)]
mod tests;

pub use diagnose::{cross_check, diagnose, engine_kv_bound, runs_advice, ClientLoad, CrossCheck, FanOut, Schedule};
pub use fold::{is_folded_series, is_series_cap_warning, Folded, Folder, SignalKey, MAX_SCRAPE_VALUES};
pub use histogram::{histogram_quantile, Bucket, Histogram, MAX_HISTOGRAM_BOUNDS};
pub use parse::{
    merge_endpoints, metric_lines, parse, parse_at_most, parse_keeping, Family, Labels, MetricType, ParseError,
    ParseErrorKind, Sample, Scrape, ENDPOINT_LABEL, MAX_METRIC_LINES,
};
pub use signals::{
    detect, is_histogram_cap_warning, is_read, Carried, Coarsened, CounterSignal, GaugeSignal, HistogramSignal,
    Signals, Source,
};
pub use thin::{is_thinned_warning, Thinned, Thinner, MAX_RUN_VALUES};
pub use window::{
    series_coverage, summarize, summarize_points, summarize_signals, CounterSummary, HistogramSummary, Series,
    SeriesCoverage, WindowSummary, GAUGE_PERCENTILES,
};

use crate::{Diagnosis, RequestRecord, Summary, Window};

/// Whether `w` is one of a live run's warnings of what it kept of its
/// scrapes (histograms of too many bounds coarsened, signals of too many
/// series summed, a long run's scrapes thinned), which its samples do not
/// say: a result drawn again from them (`report`, `merge`, a sweep's
/// stages) carries it.
pub fn is_kept_scrapes_warning(w: &str) -> bool {
    is_histogram_cap_warning(w) || is_series_cap_warning(w) || is_thinned_warning(w)
}
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A result's `server_signals`: what the server's own metrics said over the
/// run's window, their cross-check against the client, and every scrape
/// they came from, so that `report` (another `--window`, another SLO) and a
/// merge of shards recompute them as a live run does.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(default)]
pub struct ServerSignals {
    /// The endpoints scraped, credentials masked.
    pub urls: Vec<String>,
    pub interval_s: f64,
    /// Scrapes taken over the whole run (a long one keeps fewer in
    /// `samples`: `thinned` says which).
    pub scrapes: usize,
    pub failed_scrapes: u64,
    /// Lines the parser could not read, over all scrapes.
    pub parse_errors: u64,
    pub last_error: Option<String>,
    /// The inference engine recognised from metric names (`vllm`, `sglang`, …).
    pub engine: Option<Source>,
    /// The window's summary, widened to the scrapes that bracket it.
    pub window: WindowSummary,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross_check: Option<CrossCheck>,
    /// Every scrape, mapped to signals and stamped on the run's clock; of a
    /// long run, every `thinned.every`th; of a sweep's stage, those of its
    /// window alone (`cut`). Absent from documents of goodput
    /// before 0.1 (their signals are then kept as saved).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<ScrapeSample>,
    /// Where the run kept fewer scrapes than it took, to stay within the
    /// values goodput keeps of a run's scrapes (4,000,000, `scrape::thin`):
    /// absent where it kept them all (and from documents of goodput before
    /// it thinned them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinned: Option<Thinned>,
    /// Where `samples` hold a stretch of the run (a sweep's stage), not the
    /// whole of it: the window they were cut to, from the last scrape at or
    /// before its start to the first at or after its end
    /// ([`ServerSignals::cut_to`]). `scrapes`, `thinned` and the
    /// failed scrapes stay the whole run's; the cross-check then sets no
    /// count of the server's over the whole run against the client's, as
    /// of `report --window`. Absent where they hold the whole run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<Window>,
}

/// One scrape of every endpoint, mapped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ScrapeSample {
    /// When it was taken, on the run's clock.
    #[serde(rename = "t_ns", with = "crate::util::serde_ns")]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub t: Duration,
    pub signals: Signals,
}

impl ServerSignals {
    /// Summarises the samples over `window` (widened to the scrapes that
    /// bracket it, so that counters cover all of it: a scrape falls inside
    /// the window only by chance at its edges) and over the whole run,
    /// cross-checks them against the client's `records` and `summary`, and
    /// gives the diagnosis. `load` is the client's (its cap and rate);
    /// `windowed`, records of a stretch of the run (`report --window`),
    /// whose counts are not set against the server's.
    /// Nothing to recompute without samples: the saved summary stays, and
    /// the diagnosis is drawn without the server's side.
    pub fn analyse(
        &mut self,
        records: &[RequestRecord],
        summary: &Summary,
        window: &Window,
        load: ClientLoad,
        windowed: bool,
    ) -> Vec<Diagnosis> {
        if self.samples.is_empty() {
            return diagnose(records, summary, None, load);
        }
        // Scrapes cut to a stretch of the run hold no whole run either.
        let windowed = windowed || self.cut.is_some();
        let (before, after) = self.bracket(window);
        let points = || self.samples.iter().map(|s| (s.t, &s.signals));
        let inside = summarize_points(points(), before, after);
        let last = self.samples.iter().map(|s| s.t).max().unwrap_or_default();
        // A stretch of the run (report --window) has no whole run to count against.
        let whole = (!windowed).then(|| summarize_points(points(), Duration::ZERO, last));
        self.cross_check = Some(cross_check(records, summary, &inside, whole.as_ref(), load));
        let diagnosis = diagnose(records, summary, Some(&inside), load);
        self.engine = inside.engine;
        self.window = inside;
        diagnosis
    }

    /// The scrapes that bracket `window`, which [`analyse`] summarises it
    /// between: the last at or before its start, the first at or after its
    /// end (the window's own bound on a side where there is none).
    ///
    /// [`analyse`]: ServerSignals::analyse
    fn bracket(&self, window: &Window) -> (Duration, Duration) {
        let (t1, t2) = (crate::clamped_secs(window.start_s), crate::clamped_secs(window.end_s));
        let times = || self.samples.iter().map(|s| s.t);
        let before = times().filter(|&t| t <= t1).max().unwrap_or(t1);
        let after = times().filter(|&t| t >= t2).min().unwrap_or(t2);
        (before, after)
    }

    /// These signals with only the scrapes that [`analyse`] reads of
    /// `window`: from the last at or before its start to the first at or
    /// after its end (and those within a microsecond outside them, which
    /// [`coverage`] reads of bounds that went through f64 seconds). Its
    /// summary, energy and coverage, and those of any window within it
    /// (`report --window`), read as of every scrape: a kept scrape's carried
    /// increases are read only with the kept scrape before it, and the first
    /// one kept is each window's first. A stretch of a run (a sweep's stage)
    /// keeps its own scrapes, not the whole run's, and says so in `cut`:
    /// `scrapes`, `thinned` and the failed scrapes stay the whole run's, and
    /// [`analyse`] then counts nothing over the whole run (it is not there).
    /// Only the kept scrapes are copied.
    ///
    /// [`analyse`]: ServerSignals::analyse
    /// [`coverage`]: ServerSignals::coverage
    pub fn cut_to(&self, window: &Window) -> ServerSignals {
        let mut cut = self.without_samples();
        if !self.samples.is_empty() {
            let (before, after) = self.bracket(window);
            let slack = Duration::from_micros(1);
            let (from, to) = (before.saturating_sub(slack), after.saturating_add(slack));
            cut.samples = self.samples.iter().filter(|s| (from..=to).contains(&s.t)).cloned().collect();
            cut.cut = Some(*window);
        }
        cut
    }

    /// A copy of all but the samples.
    fn without_samples(&self) -> ServerSignals {
        ServerSignals {
            urls: self.urls.clone(),
            interval_s: self.interval_s,
            scrapes: self.scrapes,
            failed_scrapes: self.failed_scrapes,
            parse_errors: self.parse_errors,
            last_error: self.last_error.clone(),
            engine: self.engine,
            window: self.window.clone(),
            cross_check: self.cross_check.clone(),
            samples: Vec::new(),
            thinned: self.thinned,
            cut: self.cut,
        }
    }

    /// How `signal`'s series covered the scrapes of the window [`analyse`]
    /// summarised (the window widened to the scrapes that bracket it).
    ///
    /// [`analyse`]: ServerSignals::analyse
    pub fn coverage(&self, signal: CounterSignal) -> SeriesCoverage {
        let w = &self.window.window;
        // The bounds went through f64 seconds: a microsecond either side
        // keeps the scrapes they were taken from.
        let slack = Duration::from_micros(1);
        let (start, end) =
            (crate::clamped_secs(w.start_s).saturating_sub(slack), crate::clamped_secs(w.end_s).saturating_add(slack));
        series_coverage(self.samples.iter().map(|s| (s.t, &s.signals)), start, end, signal)
    }
}
