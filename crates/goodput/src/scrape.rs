//! The scraping loop: fetch one or more Prometheus endpoints at a fixed
//! interval during a run (`signals`) or on its own (`monitor`), stamp each
//! scrape on the run's clock (the midpoint of its request), and keep the
//! mapped signals. A failed or malformed scrape is counted and the loop goes
//! on. The parsing and mapping are goodput-core's `prometheus::scrape`.

use goodput_core::prometheus::scrape::{parse, Signals};
use goodput_load::client::error_chain;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A scrape of a Prometheus endpoint that brought no text back.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    /// The request failed: the URL and the client's chain of reasons.
    #[error("{url}: {reason}")]
    Fetch { url: String, reason: String },
    /// An answer that was not the metrics: its status, and where a
    /// redirect pointed (not followed: it could send the headers elsewhere).
    #[error("{url}: HTTP {status}{}", redirect.as_ref().map(|to| format!(
        ", a redirect to {to}, not followed: if the metrics are served there, give that address (--metrics-url)"
    )).unwrap_or_default())]
    Status { url: String, status: reqwest::StatusCode, redirect: Option<String> },
    /// No whole answer within the scrape's time limit.
    #[error("{url}: no whole answer within {}s (a scrape may take the interval, 2 s at least)", .limit.as_secs_f64())]
    Slow { url: String, limit: Duration },
    /// The body went on past the cap (`--max-buffer`): read no further.
    #[error(
        "{url}: the answer passed {} without ending, and was cut there (--max-buffer raises the cap)",
        goodput_core::util::input::size(*cap as u64)
    )]
    TooLong { url: String, cap: usize },
}

/// Where and how often to scrape.
#[derive(Debug, Clone)]
pub struct Scraper {
    http: reqwest::Client,
    pub urls: Vec<String>,
    pub interval: Duration,
    /// The most bytes one URL's answer may hold (`--max-buffer`): a real
    /// exposition is tens of KiB, and one without end is cut here.
    pub max_body: usize,
}

/// What the scraping produced.
#[derive(Debug, Default, Clone)]
pub struct ScrapeLog {
    /// Mapped scrapes, stamped on the run clock, in order.
    pub points: Vec<(Duration, Signals)>,
    pub failures: u64,
    /// Lines the parser could not read, over all scrapes.
    pub parse_errors: u64,
    pub last_error: Option<String>,
}

/// One scrape of every URL, parsed and mapped.
#[derive(Debug, Clone)]
pub struct Scraped {
    pub signals: Signals,
    /// Lines the parser could not read.
    pub parse_errors: usize,
    /// Metric families read: none means the URLs do not serve Prometheus text.
    pub families: usize,
}

/// Why a body was not read whole.
#[derive(Debug)]
pub enum Capped {
    /// It went on past the cap; nothing more was read.
    TooLong,
    Fetch(reqwest::Error),
}

/// Reads `resp`'s body, holding at most `cap` bytes of it: a longer one
/// (a server that never ends it) is [`Capped::TooLong`], read no further.
/// A `content-length` past the cap is refused before a byte is read.
pub async fn read_capped(mut resp: reqwest::Response, cap: usize) -> Result<Vec<u8>, Capped> {
    if resp.content_length().is_some_and(|n| n > cap as u64) {
        return Err(Capped::TooLong);
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(Capped::Fetch)? {
        if body.len() + chunk.len() > cap {
            return Err(Capped::TooLong);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// How long the probe of a default `<url>/metrics` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Scraper {
    pub fn new(http: reqwest::Client, urls: Vec<String>, interval: Duration, max_body: usize) -> Self {
        Scraper { http, urls, interval, max_body }
    }

    /// One scrape of every URL, their texts read as one exposition, stamped
    /// on the run's clock at the midpoint of its requests.
    pub async fn scrape_at(&self, origin: Instant) -> Result<(Duration, Scraped), ScrapeError> {
        self.stamped(origin, self.interval.max(Duration::from_secs(2))).await
    }

    async fn stamped(&self, origin: Instant, timeout: Duration) -> Result<(Duration, Scraped), ScrapeError> {
        let sent = origin.elapsed();
        let fetches = self.urls.iter().map(|u| async move {
            let fetch = |e: reqwest::Error| match e.is_timeout() {
                true => ScrapeError::Slow { url: u.clone(), limit: timeout },
                false => ScrapeError::Fetch { url: u.clone(), reason: error_chain(&e) },
            };
            let resp = self.http.get(u).timeout(timeout).send().await.map_err(fetch)?;
            if !resp.status().is_success() {
                let redirect = resp
                    .status()
                    .is_redirection()
                    .then(|| resp.headers().get("location").map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned()))
                    .flatten();
                return Err(ScrapeError::Status { url: u.clone(), status: resp.status(), redirect });
            }
            match read_capped(resp, self.max_body).await {
                Ok(body) => Ok(body),
                Err(Capped::TooLong) => Err(ScrapeError::TooLong { url: u.clone(), cap: self.max_body }),
                Err(Capped::Fetch(e)) => Err(fetch(e)),
            }
        });
        let texts = futures::future::join_all(fetches).await;
        let t = sent + (origin.elapsed() - sent) / 2;
        let mut all = String::new();
        for text in texts {
            all.push_str(&String::from_utf8_lossy(&text?));
            all.push('\n');
        }
        let scrape = parse(&all);
        let scraped = Scraped {
            signals: Signals::from_scrape(&scrape),
            parse_errors: scrape.errors.len(),
            families: scrape.families.len(),
        };
        Ok((t, scraped))
    }

    /// Adds a scrape, or its failure, to `log`; the metric families it read.
    fn record(log: &mut ScrapeLog, res: Result<(Duration, Scraped), ScrapeError>) -> Option<usize> {
        match res {
            Ok((t, scraped)) => {
                log.parse_errors += scraped.parse_errors as u64;
                log.points.push((t, scraped.signals));
                Some(scraped.families)
            }
            Err(e) => {
                log.failures += 1;
                log.last_error = Some(e.to_string());
                None
            }
        }
    }

    /// The first scrape, taken before the load starts so the run is bracketed.
    pub async fn first(&self, origin: Instant) -> ScrapeLog {
        let mut log = ScrapeLog::default();
        Self::record(&mut log, self.scrape_at(origin).await);
        log
    }

    /// The first scrape of URLs that may serve no metrics at all (the
    /// default `<url>/metrics`): `None` unless they answered with Prometheus
    /// text. The probe and the first scrape are one request.
    pub async fn first_if_answers(&self, origin: Instant) -> Option<ScrapeLog> {
        let mut log = ScrapeLog::default();
        let families = Self::record(&mut log, self.stamped(origin, PROBE_TIMEOUT).await)?;
        (families > 0).then_some(log)
    }

    /// Scrapes every interval after `first` until `stop`, then once more.
    pub async fn run(self, mut log: ScrapeLog, origin: Instant, stop: CancellationToken) -> ScrapeLog {
        let mut tick = tokio::time::interval_at(Instant::now() + self.interval, self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    Self::record(&mut log, self.scrape_at(origin).await);
                }
                _ = stop.cancelled() => break,
            }
        }
        Self::record(&mut log, self.scrape_at(origin).await);
        log
    }
}
