//! The scraping loop: fetch one or more Prometheus endpoints at a fixed
//! interval during a run (`signals`) or on its own (`monitor`), stamp each
//! scrape on the run's clock (the midpoint of its request), and keep the
//! mapped signals. A failed or malformed scrape is counted and the loop goes
//! on; an endpoint that fails while others answer costs only its own part.
//! The parsing and mapping are goodput-core's `prometheus::scrape`.

use goodput_core::prometheus::scrape::{
    is_read, merge_endpoints, metric_lines, parse_keeping, Coarsened, Folder, HistogramSignal, Signals, Thinner,
    MAX_METRIC_LINES,
};
use goodput_load::client::error_chain;
use std::collections::BTreeMap;
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
    /// More metric lines than goodput reads of one endpoint: refused before
    /// they are parsed, so that the scrape's memory stays bounded.
    #[error(
        "{url}: {lines} metric lines (samples, # HELP and # TYPE), more than the {limit} goodput reads of one \
         endpoint; an inference server exposes a few thousand: give its own metrics endpoint, not an aggregate \
         (--metrics-url)"
    )]
    TooManyLines { url: String, lines: usize, limit: usize },
    /// No endpoint answered: each one's failure, in the order given.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    Each(Vec<ScrapeError>),
}

impl ScrapeError {
    /// The endpoint that failed (`None` for [`ScrapeError::Each`]).
    pub fn url(&self) -> Option<&str> {
        match self {
            ScrapeError::Fetch { url, .. }
            | ScrapeError::Status { url, .. }
            | ScrapeError::Slow { url, .. }
            | ScrapeError::TooLong { url, .. }
            | ScrapeError::TooManyLines { url, .. } => Some(url),
            ScrapeError::Each(_) => None,
        }
    }

    /// The failures of single endpoints this is made of.
    pub fn into_each(self) -> Vec<ScrapeError> {
        match self {
            ScrapeError::Each(all) => all,
            one => vec![one],
        }
    }
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

/// The endpoints that kept a probe waiting its whole limit: not probed
/// again by this process (a sweep probes before every point, and a silent
/// /metrics had cost each point the wait).
static SILENT: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Whether `url` kept a probe ([`Scraper::first_if_answers`]) waiting its
/// whole limit: a server that does so is not probed at another path
/// either.
pub fn went_silent(url: &str) -> bool {
    SILENT.lock().unwrap_or_else(|e| e.into_inner()).iter().any(|u| u == url)
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
    /// The histograms some scrape held too many bounds of (kept coarsened),
    /// each with the most bounds a scrape held: the result warns of them.
    pub coarsened: BTreeMap<HistogramSignal, Coarsened>,
    /// Keeps each point within a bound, its largest signals summed past it:
    /// the result warns of those.
    pub folder: Folder,
    /// Keeps the points within a bound over the run, every other one
    /// dropped each time they reach it: the result says how many it kept.
    pub thinner: Thinner,
}

impl ScrapeLog {
    /// Adds a scrape's signals, noting the histograms it coarsened, and
    /// folding them past the bound of what a scrape keeps (a server of
    /// 99,000 series of one counter had had them all kept at every scrape,
    /// and a 10 s bench scraping every 100 ms grown to 790 MB), then
    /// thinning the run's scrapes past the bound of what a run keeps (an
    /// 8-rank engine's scrapes had grown by 4.5 GB an hour at 100 ms).
    fn push(&mut self, t: Duration, mut signals: Signals) {
        for c in &signals.coarsened {
            let kept = self.coarsened.entry(c.signal).or_insert_with(|| c.clone());
            kept.bounds = kept.bounds.max(c.bounds);
        }
        self.folder.fold(self.points.last().map(|p| &p.1), &mut signals);
        self.points.push((t, signals));
        self.thinner.pushed(&mut self.points);
    }

    /// Takes `signals` in place of the last scrape.
    fn replace_last(&mut self, t: Duration, signals: Signals) {
        if self.points.pop().is_some() {
            self.folder.undo();
            self.thinner.popped();
        }
        self.push(t, signals);
    }

    /// Drops every scrape taken so far: the next is the run's first.
    pub fn clear(&mut self) {
        self.points.clear();
        self.folder = Folder::default();
        self.thinner = Thinner::default();
    }
}

/// One scrape of every URL that answered, parsed and mapped.
#[derive(Debug)]
pub struct Scraped {
    /// What the scrape says, without the samples no signal uses.
    pub signals: Signals,
    /// Lines the parser could not read.
    pub parse_errors: usize,
    /// Metric families read: none means the URLs do not serve Prometheus text.
    pub families: usize,
    /// The URLs that answered, each with the content type (and encoding,
    /// when one was given) it said its body was.
    pub answered: Vec<(String, Option<String>)>,
    /// The URLs that failed while others answered, each with why.
    pub failed: Vec<ScrapeError>,
    /// The samples of families goodput knows (vLLM's, SGLang's, …) whose
    /// value was NaN or ±Inf, by name, at most [`NON_FINITE_NAMED`]: no
    /// signal takes them, and where nothing else is read they say why.
    pub non_finite: Vec<String>,
}

/// The most names [`Scraped::non_finite`] keeps.
pub const NON_FINITE_NAMED: usize = 8;

/// The names of `scrape`'s samples of known families that hold no number.
fn non_finite(scrape: &goodput_core::prometheus::scrape::parse::Scrape) -> Vec<String> {
    use goodput_core::prometheus::scrape::signals::Source;
    let names: std::collections::BTreeSet<&str> = scrape
        .families
        .iter()
        .flat_map(|f| f.samples.iter())
        .filter(|s| !s.value.is_finite() && Source::of_metric(&s.name).is_some())
        .map(|s| s.name.as_str())
        .collect();
    names.into_iter().take(NON_FINITE_NAMED).map(str::to_owned).collect()
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

    /// One scrape of every URL, each text parsed on its own and their series
    /// kept apart by URL (`merge_endpoints`), stamped
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
            let header =
                |name: &str| resp.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
            let content_type = match (header("content-type"), header("content-encoding")) {
                (t, None) => t,
                (t, Some(enc)) => Some(format!("{}, {enc}-encoded", t.as_deref().unwrap_or("no content type"))),
            };
            let body = match read_capped(resp, self.max_body).await {
                Ok(body) => body,
                Err(Capped::TooLong) => return Err(ScrapeError::TooLong { url: u.clone(), cap: self.max_body }),
                Err(Capped::Fetch(e)) => return Err(fetch(e)),
            };
            // Counted before it is parsed: parsing costs memory by the line.
            let text = String::from_utf8(body).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            let lines = metric_lines(&text);
            if lines > MAX_METRIC_LINES {
                return Err(ScrapeError::TooManyLines { url: u.clone(), lines, limit: MAX_METRIC_LINES });
            }
            Ok((u.clone(), content_type, text))
        });
        let texts = futures::future::join_all(fetches).await;
        let t = sent + (origin.elapsed() - sent) / 2;
        let (mut bodies, mut answered, mut failed): (Vec<String>, _, _) = (Vec::new(), Vec::new(), Vec::new());
        for text in texts {
            match text {
                Ok((url, content_type, text)) => {
                    bodies.push(text);
                    answered.push((url, content_type));
                }
                Err(e) => failed.push(e),
            }
        }
        if answered.is_empty() {
            return Err(match failed.len() {
                1 => failed.remove(0),
                _ => ScrapeError::Each(failed),
            });
        }
        // Each text parsed as its own exposition (each holds at most
        // MAX_METRIC_LINES), and each's series labelled with its URL, so
        // that two exporters' series of one name are both read and summed.
        let several = self.urls.len() > 1;
        let parts: Vec<(String, _)> = answered
            .iter()
            .zip(bodies)
            .map(|((url, _), text)| {
                let name = if several { goodput_core::util::redact::redact_url(url) } else { url.clone() };
                // Only the families a signal reads are kept: an endpoint
                // of 99,000 other series had had each parsed into a sample
                // at every scrape, to be dropped.
                (name, parse_keeping(&text, MAX_METRIC_LINES, is_read))
            })
            .collect();
        let scrape = match several {
            true => merge_endpoints(parts),
            false => parts.into_iter().next().map(|p| p.1).unwrap_or_default(),
        };
        let scraped = Scraped {
            signals: Signals::mapped(&scrape),
            parse_errors: scrape.errors.len(),
            families: scrape.families.len(),
            answered,
            failed,
            non_finite: non_finite(&scrape),
        };
        Ok((t, scraped))
    }

    /// Adds a scrape, or its failure, to `log`; the metric families it read.
    fn record(log: &mut ScrapeLog, res: Result<(Duration, Scraped), ScrapeError>) -> Option<usize> {
        match res {
            Ok((t, scraped)) => {
                log.parse_errors += scraped.parse_errors as u64;
                log.push(t, scraped.signals);
                if !scraped.failed.is_empty() {
                    // The others answered: kept, and the one that did not named.
                    log.last_error = Some(ScrapeError::Each(scraped.failed).to_string());
                }
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
    /// An endpoint that failed while others answered is said here (a run
    /// whose scrapes all failed is warned of by its caller).
    pub async fn first(&self, origin: Instant) -> ScrapeLog {
        let mut log = ScrapeLog::default();
        let res = self.scrape_at(origin).await;
        if let Ok((_, scraped)) = &res {
            for e in &scraped.failed {
                goodput_core::tell!(
                    "warning: one endpoint failed the first scrape ({}); the others are read, and it is tried at every scrape",
                    crate::output::shown(&e.to_string())
                );
            }
        }
        Self::record(&mut log, res);
        log
    }

    /// The first scrape of URLs that may serve no metrics at all (the
    /// default `<url>/metrics`): `None` unless they answered with Prometheus
    /// text. The probe and the first scrape are one request.
    pub async fn first_if_answers(&self, origin: Instant) -> Option<ScrapeLog> {
        if self.urls.iter().any(|u| went_silent(u)) {
            return None;
        }
        let mut log = ScrapeLog::default();
        let res = self.stamped(origin, PROBE_TIMEOUT).await;
        if let Err(e @ ScrapeError::TooManyLines { .. }) = &res {
            // It answered, with far too much: said, where a missing endpoint is not.
            goodput_core::tell!(
                "warning: the server's metrics are not read: {}; the run goes on without them",
                crate::output::shown(&e.to_string())
            );
        }
        if let Err(ScrapeError::Slow { url, limit }) = &res {
            let mut known = SILENT.lock().unwrap_or_else(|e| e.into_inner());
            if !known.contains(url) {
                known.push(url.clone());
                goodput_core::tell!(
                    "warning: {} gave no whole answer within {}s, so the server's metrics are not read and the \
                     result has none (the run's clock started after the wait, which delays no request; later \
                     runs of this command do not probe it again): give --metrics-url URL where they are served, \
                     or --no-metrics to skip this probe",
                    crate::output::shown(&goodput_core::util::redact::redact_url(url)),
                    limit.as_secs_f64()
                );
            }
        }
        let families = Self::record(&mut log, res)?;
        (families > 0).then_some(log)
    }

    /// Scrapes every interval after `first` until `stop`, then once more;
    /// `now`, once at the start too (the baseline at the load's start, where
    /// `first` was taken long before it). The scraper comes back with the
    /// log, for [`Scraper::settle`].
    pub async fn run(self, mut log: ScrapeLog, origin: Instant, now: bool, stop: CancellationToken) -> Ended {
        if now {
            Self::record(&mut log, self.scrape_at(origin).await);
        }
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
        let last_taken = Self::record(&mut log, self.scrape_at(origin).await).is_some();
        Ended { scraper: self, log, last_taken }
    }

    /// Takes the final scrape again, every [`SETTLE_POLL`], until `settled`
    /// holds for the log or `within` has passed (a scrape that fails keeps
    /// the one before). A server counts a request the client cancelled
    /// once it notices the disconnect: goodput's engine server within
    /// milliseconds, yet after the final scrape taken the instant the run
    /// ended (2 runs of 3 of `bench -c 8 --duration 3s --grace 0s` had said
    /// the server ended 0 or 1 requests as aborted, of 8 cancelled, and
    /// blamed a disconnect the server did not notice).
    pub async fn settle(ended: &mut Ended, origin: Instant, within: Duration, settled: impl Fn(&ScrapeLog) -> bool) {
        let Ended { scraper, log, last_taken } = ended;
        let deadline = Instant::now() + within;
        while !settled(log) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            tokio::time::sleep(SETTLE_POLL.min(left)).await;
            let left = deadline.saturating_duration_since(Instant::now());
            // Only a whole scrape replaces the final one: one an endpoint
            // failed would drop its counters, which a delta reads as a
            // reset. Its parse errors were counted once, by the scrape it
            // replaces.
            if let Ok((t, scraped)) = scraper.stamped(origin, left.max(SETTLE_POLL)).await {
                if !scraped.failed.is_empty() {
                    continue;
                }
                // The final scrape is replaced, not followed: a run's
                // scrapes stay an interval apart.
                match *last_taken {
                    true => log.replace_last(t, scraped.signals),
                    false => log.push(t, scraped.signals),
                }
                *last_taken = true;
            }
        }
    }
}

/// A scraping loop ended: its scraper, its log, and whether the final
/// scrape was taken (the log's last point is it).
pub struct Ended {
    pub scraper: Scraper,
    pub log: ScrapeLog,
    pub last_taken: bool,
}

/// How often [`Scraper::settle`] takes the final scrape again.
const SETTLE_POLL: Duration = Duration::from_millis(50);
