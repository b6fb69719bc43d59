//! The server's own signals beside a run: which endpoints to scrape, the
//! scraping task, and the `server_signals` block, cross-check and diagnosis
//! built from what it gathered.

use crate::cli::MetricsArgs;
use crate::scrape::{ScrapeLog, Scraper};
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
    task: JoinHandle<ScrapeLog>,
}

/// Resolves the endpoints (the given ones, or `<base>/metrics` when it
/// answers), takes the first scrape and starts the loop; each answer is
/// read up to `max_body` bytes (`--max-buffer`).
pub async fn start(
    m: &MetricsArgs,
    http: &reqwest::Client,
    base: &str,
    origin: Instant,
    max_body: usize,
) -> Result<Option<Scraping>> {
    if m.no_metrics {
        return Ok(None);
    }
    if m.metrics_interval.is_zero() {
        anyhow::bail!("--metrics-interval must be longer than zero");
    }
    let (scraper, log) = if m.metrics_url.is_empty() {
        let scraper = Scraper::new(
            http.clone(),
            vec![goodput_load::client::join_url(base, "/metrics")],
            m.metrics_interval,
            max_body,
        );
        match scraper.first_if_answers(origin).await {
            Some(log) => (scraper, log),
            None => return Ok(None),
        }
    } else {
        let scraper = Scraper::new(http.clone(), m.metrics_url.clone(), m.metrics_interval, max_body);
        let log = scraper.first(origin).await;
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
    let stop = CancellationToken::new();
    let task = tokio::spawn(scraper.run(log, origin, stop.clone()));
    Ok(Some(Scraping { urls, interval: m.metrics_interval, stop, task }))
}

/// Stops the scraping (after one last scrape) and puts its findings into `result`.
pub async fn finish(s: Option<Scraping>, result: &mut RunResult, records: &[RequestRecord], load: ClientLoad) {
    let Some(s) = s else {
        result.diagnosis = diagnose(records, &result.summary, None, load);
        return;
    };
    s.stop.cancel();
    let log = s.task.await.unwrap_or_default();
    attach(log, s.urls, s.interval, result, records, load);
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
    let samples = log
        .points
        .into_iter()
        .map(|(t, mut signals)| {
            // What no signal used stays out of the result.
            signals.unmapped = Vec::new();
            ScrapeSample { t, signals }
        })
        .collect::<Vec<_>>();
    let signals = ServerSignals {
        urls,
        interval_s: interval.as_secs_f64(),
        scrapes: samples.len(),
        failed_scrapes: log.failures,
        parse_errors: log.parse_errors,
        // A failed scrape's words may hold a URL's credentials or a server's echo of them.
        last_error: log.last_error.map(|e| goodput_core::util::redact::scrub(&e).into_owned()),
        samples,
        ..ServerSignals::default()
    };
    attach_server_side(result, ServerSide::Scraped(signals), records, load);
}
