//! The scraping loop: fetch one or more Prometheus endpoints at a fixed
//! interval during a run, stamp each scrape on the run's clock (the midpoint
//! of its request), and keep the mapped signals. A failed or malformed
//! scrape is counted and the loop goes on.

use crate::client::error_chain;
use crate::scrape::{parse, Signals};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Where and how often to scrape.
#[derive(Debug, Clone)]
pub struct Scraper {
    http: reqwest::Client,
    pub urls: Vec<String>,
    pub interval: Duration,
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

impl Scraper {
    pub fn new(http: reqwest::Client, urls: Vec<String>, interval: Duration) -> Self {
        Scraper { http, urls, interval }
    }

    /// Whether `url` answers with Prometheus text: the check behind the
    /// default `<url>/metrics`, which a server may not have.
    pub async fn answers(http: &reqwest::Client, url: &str) -> bool {
        match http.get(url).timeout(Duration::from_secs(5)).send().await {
            Ok(r) if r.status().is_success() => match r.text().await {
                Ok(t) => !parse(&t).families.is_empty(),
                Err(_) => false,
            },
            _ => false,
        }
    }

    /// One scrape of every URL, their texts read as one exposition.
    pub async fn scrape_once(&self) -> Result<(Signals, usize), String> {
        let fetches = self.urls.iter().map(|u| async move {
            let resp = self
                .http
                .get(u)
                .timeout(self.interval.max(Duration::from_secs(2)))
                .send()
                .await
                .map_err(|e| format!("{u}: {}", error_chain(&e)))?;
            if !resp.status().is_success() {
                return Err(format!("{u}: HTTP {}", resp.status()));
            }
            resp.text().await.map_err(|e| format!("{u}: {}", error_chain(&e)))
        });
        let texts = futures::future::join_all(fetches).await;
        let mut all = String::new();
        for t in texts {
            all.push_str(&t?);
            all.push('\n');
        }
        let scrape = parse(&all);
        Ok((Signals::from_scrape(&scrape), scrape.errors.len()))
    }

    async fn record(&self, origin: Instant, log: &mut ScrapeLog) {
        let sent = origin.elapsed();
        let res = self.scrape_once().await;
        let t = sent + (origin.elapsed() - sent) / 2;
        match res {
            Ok((signals, errors)) => {
                log.parse_errors += errors as u64;
                log.points.push((t, signals));
            }
            Err(e) => {
                log.failures += 1;
                log.last_error = Some(e);
            }
        }
    }

    /// The first scrape, taken before the load starts so the run is bracketed.
    pub async fn first(&self, origin: Instant) -> ScrapeLog {
        let mut log = ScrapeLog::default();
        self.record(origin, &mut log).await;
        log
    }

    /// Scrapes every interval after `first` until `stop`, then once more.
    pub async fn run(self, mut log: ScrapeLog, origin: Instant, stop: CancellationToken) -> ScrapeLog {
        let mut tick = tokio::time::interval_at(Instant::now() + self.interval, self.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.record(origin, &mut log).await,
                _ = stop.cancelled() => break,
            }
        }
        self.record(origin, &mut log).await;
        log
    }
}
