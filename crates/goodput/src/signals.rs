//! The server's own signals beside a run: which endpoints to scrape, the
//! scraping task, and the `server_signals` block, cross-check and diagnosis
//! built from what it gathered.

use crate::cli::MetricsArgs;
use crate::scrape::{Ended, ScrapeLog, Scraper};
use anyhow::Result;
use goodput_core::analysis::assemble::{attach_server_side, ServerSide};
use goodput_core::prometheus::scrape::{diagnose, ClientLoad, ScrapeSample, ServerSignals};
use goodput_core::{RequestRecord, RunResult};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A scraping task under way.
pub struct Scraping {
    urls: Vec<String>,
    interval: Duration,
    stop: CancellationToken,
    task: JoinHandle<Ended>,
    /// The load's clock the scrapes are stamped on.
    origin: Instant,
}

/// The first scrape, taken before the load's clock starts: [`FirstScrape::begin`]
/// starts the loop on that clock.
pub struct FirstScrape {
    scraper: Scraper,
    log: ScrapeLog,
    urls: Vec<String>,
    interval: Duration,
    /// The clock the first scrape was stamped on.
    taken_on: Instant,
}

/// Resolves the endpoints (the given ones, or `<base>/metrics` when it
/// answers) and takes the first scrape; each answer is read up to
/// `max_body` bytes (`--max-buffer`). The load's clock is started after
/// this returns, so a slow or silent endpoint delays the run's start, never
/// its schedule: a /metrics that hung 5 s had sent an open loop's first 5 s
/// of requests in one burst, and charged the wait to the client.
pub async fn start(
    m: &MetricsArgs,
    http: &reqwest::Client,
    base: &str,
    max_body: usize,
) -> Result<Option<FirstScrape>> {
    if m.no_metrics {
        return Ok(None);
    }
    if m.metrics_interval.is_zero() {
        anyhow::bail!("--metrics-interval must be longer than zero");
    }
    let taken_on = Instant::now();
    let (scraper, log) = if m.metrics_url.is_empty() {
        match probe(http, base, m.metrics_interval, max_body, taken_on).await {
            Some(found) => found,
            None => return Ok(None),
        }
    } else {
        let scraper = Scraper::new(http.clone(), m.metrics_url.clone(), m.metrics_interval, max_body);
        let log = scraper.first(taken_on).await;
        (scraper, log)
    };
    // Recorded and shown without the credentials any of them carries.
    let urls: Vec<String> = scraper.urls.iter().map(|u| goodput_core::util::redact::redact_url(u)).collect();
    if log.points.is_empty() {
        goodput_core::tell!(
            "warning: the first scrape of {} failed ({}); the run goes on and scraping keeps trying",
            urls.join(", "),
            crate::output::shown(log.last_error.as_deref().unwrap_or("no answer"))
        );
    }
    Ok(Some(FirstScrape { scraper, log, urls, interval: m.metrics_interval, taken_on }))
}

/// Where a server's Prometheus text is looked for when no --metrics-url is
/// given: `/metrics`, else TensorRT-LLM's `/prometheus/metrics` (trtllm-serve
/// serves JSON iteration statistics at `/metrics`).
const METRICS_PATHS: [&str; 2] = ["/metrics", "/prometheus/metrics"];

/// The first of [`METRICS_PATHS`] under `base` that answers with Prometheus
/// text, its scraper and first scrape; none where neither does, or where
/// the first kept the probe waiting (the server is not probed again).
async fn probe(
    http: &reqwest::Client,
    base: &str,
    interval: Duration,
    max_body: usize,
    taken_on: Instant,
) -> Option<(Scraper, ScrapeLog)> {
    for (i, path) in METRICS_PATHS.into_iter().enumerate() {
        let url = goodput_load::client::join_url(base, path);
        let scraper = Scraper::new(http.clone(), vec![url.clone()], interval, max_body);
        if let Some(log) = scraper.first_if_answers(taken_on).await {
            if i > 0 {
                goodput_core::tell!(
                    "note: {} serves no Prometheus text; the server's metrics are read at {} (where TensorRT-LLM's \
                     trtllm-serve serves them)",
                    goodput_core::util::redact::redact_url(&goodput_load::client::join_url(base, METRICS_PATHS[0])),
                    goodput_core::util::redact::redact_url(&url)
                );
            }
            return Some((scraper, log));
        }
        if crate::scrape::went_silent(&url) {
            return None;
        }
    }
    None
}

impl FirstScrape {
    /// Starts the scraping loop on the load's clock, which starts at
    /// `origin`: the first scrape, taken before it, is stamped at its zero.
    /// After a wait (`--start-at`, `waited`) that scrape is no baseline: the
    /// counters it read (the GPUs' energy over the wait, above all) are of
    /// before the run. It is then dropped, and the loop takes its first
    /// scrape at once, stamped when it was taken on the load's clock.
    pub fn begin(self, origin: Instant, waited: bool) -> Scraping {
        let FirstScrape { scraper, mut log, urls, interval, taken_on } = self;
        let before = origin.saturating_duration_since(taken_on);
        for (t, _) in &mut log.points {
            *t = t.saturating_sub(before);
        }
        if waited {
            log.clear();
        }
        let stop = CancellationToken::new();
        let task = tokio::spawn(scraper.run(log, origin, waited, stop.clone()));
        Scraping { urls, interval, stop, task, origin }
    }
}

/// Stops the scraping (after one last scrape) and puts its findings into
/// `result`. Where the client cancelled requests the server had answered
/// (it had their first byte), the last scrape waits up to [`ABORT_SETTLE`]
/// for the server's count of aborted or failed requests to reach theirs.
pub async fn finish(s: Option<Scraping>, result: &mut RunResult, records: &[RequestRecord], load: ClientLoad) {
    let Some(s) = s else {
        result.diagnosis = diagnose(records, &result.summary, None, load.asked(result.config.client.as_ref()));
        return;
    };
    s.stop.cancel();
    let log = match s.task.await {
        Ok(mut ended) => {
            if let Some(target) = abort_target(records) {
                let counted = move |log: &ScrapeLog| aborted_over_run(log).is_none_or(|n| n >= target - 0.5);
                Scraper::settle(&mut ended, s.origin, ABORT_SETTLE, counted).await;
            }
            ended.log
        }
        Err(_) => ScrapeLog::default(),
    };
    attach(log, s.urls, s.interval, result, records, load);
}

/// The count of aborted or failed requests the server must reach before
/// the final scrape is taken as settled, where the client cancelled
/// requests the server had answered: those cancels and the client's
/// failures, which the server's count holds too (two 500s already counted
/// had met a target of two cancels not yet counted). `None`: no cancel to
/// wait for.
fn abort_target(records: &[RequestRecord]) -> Option<f64> {
    let taken = records
        .iter()
        .filter(|r| matches!(r.outcome, goodput_core::Outcome::Cancelled) && r.first_byte.is_some())
        .count();
    let failed = records.iter().filter(|r| r.outcome.failure_kind().is_some()).count();
    (taken > 0).then_some((taken + failed) as f64)
}

/// The longest the final scrape waits for the server to count the requests
/// the client cancelled: goodput's engine server counts them within
/// milliseconds, vLLM at its next engine step.
const ABORT_SETTLE: Duration = Duration::from_secs(1);

/// The requests the server ended as aborted or failed over the scrapes of
/// `log`, as the cross-check counts them; `None` where it reports no such
/// counter (waiting would change nothing).
fn aborted_over_run(log: &ScrapeLog) -> Option<f64> {
    use goodput_core::prometheus::scrape::{summarize_points, CounterSignal};
    let last = log.points.last()?.0;
    let run = summarize_points(log.points.iter().map(|(t, s)| (*t, s)), Duration::ZERO, last);
    run.counters.get(&CounterSignal::RequestsFailed).map(|c| c.delta)
}

/// Builds `server_signals` (with every scrape, so that it can be recomputed),
/// the cross-check and the diagnosis from a scrape log.
pub fn attach(
    log: ScrapeLog,
    urls: Vec<String>,
    interval: Duration,
    result: &mut RunResult,
    records: &[RequestRecord],
    load: ClientLoad,
) {
    // A halving of a long run's scrapes still under way, ended.
    let mut log = log;
    log.thinner.finish(&mut log.points);
    // Signals of too many series, kept summed: said once.
    let folded = log.folder.warning();
    // A long run's scrapes, kept every other one past a bound: said once.
    let (thinned, thinned_warning) = (log.thinner.thinned(), log.thinner.warning(interval));
    let taken = usize::try_from(log.thinner.taken()).unwrap_or(usize::MAX);
    let samples = log
        .points
        .into_iter()
        .map(|(t, mut signals)| {
            // What no signal used stays out of the result.
            signals.unmapped = Vec::new();
            signals.coarsened = Vec::new();
            ScrapeSample { t, signals }
        })
        .collect::<Vec<_>>();
    // Histograms of too many bounds, kept without their buckets: said.
    result.warnings.extend(log.coarsened.values().map(|c| c.warning()));
    result.warnings.extend(folded);
    result.warnings.extend(thinned_warning);
    let signals = ServerSignals {
        urls,
        interval_s: interval.as_secs_f64(),
        scrapes: taken,
        thinned,
        failed_scrapes: log.failures,
        parse_errors: log.parse_errors,
        // A failed scrape's words may hold a URL's credentials or a server's echo of them.
        last_error: log.last_error.map(|e| goodput_core::util::redact::scrub(&e).into_owned()),
        samples,
        ..ServerSignals::default()
    };
    attach_server_side(result, ServerSide::Scraped(signals), records, load);
}

#[cfg(test)]
mod tests {
    use super::abort_target;
    use goodput_core::{FailureKind, Outcome, RequestRecord};
    use std::time::Duration;

    /// The final scrape waits for the cancels the server answered and the
    /// client's failures, both in the server's count; nothing without a
    /// cancel it answered.
    #[test]
    fn the_final_scrape_waits_for_the_cancels_beside_the_failures() {
        let rec = |outcome: Outcome, answered: bool| {
            let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
            r.outcome = outcome;
            r.first_byte = answered.then_some(Duration::from_millis(5));
            r
        };
        let failed = || Outcome::Failed { kind: FailureKind::HttpStatus, message: "HTTP 500".into() };
        let mut records = vec![rec(failed(), true), rec(failed(), false), rec(Outcome::Success, true)];
        assert_eq!(abort_target(&records), None, "no cancel to wait for");
        records.push(rec(Outcome::Cancelled, false));
        assert_eq!(abort_target(&records), None, "a cancel before any byte: the server never counts it");
        records.extend([rec(Outcome::Cancelled, true), rec(Outcome::Cancelled, true)]);
        // Two 500s counted, two cancels not yet: a target of 2 had been met.
        assert_eq!(abort_target(&records), Some(4.0));
    }
}
