//! `goodput monitor`: a running server's own signals, interval by interval
//! (queue, KV, prefix hits, token rates, server TTFT/ITL quantiles, GPU),
//! with optional probe requests that show what users see now, alert
//! thresholds, and a JSONL record of the series.

use crate::cli::MonitorArgs;
use crate::output::shown;
use crate::scrape::{ScrapeError, Scraped, Scraper};
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::analysis::metrics::RequestMetrics;
use goodput_core::prometheus::live::LiveMetrics;
use goodput_core::prometheus::scrape::{
    summarize_points, CounterSignal, GaugeSignal, HistogramSignal, Signals, WindowSummary,
};
use goodput_core::{Distribution, RequestRecord};
use goodput_load::client::{join_url, normalize_base, request_headers};
use goodput_load::{Arrival, BodyOptions, Client, ClientConfig, Control, LengthDist, LoadPlan, Workload};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// One alert: a named figure against a threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub name: String,
    pub above: bool,
    /// Whether the threshold itself fires it (`>=`, `<=`).
    pub inclusive: bool,
    pub threshold: f64,
}

const ALERT_NAMES: &[&str] = &[
    "kv_cache",
    "waiting",
    "running",
    "prefix_hit_rate",
    "preemptions",
    "gen_tokens_per_s",
    "ttft_p50",
    "ttft_p99",
    "itl_p50",
    "itl_p99",
    "e2e_p99",
    "queue_p99",
    "gpu_util",
    "gpu_power",
    "probe_ttft",
    "probe_tpot",
    "probe_errors",
];

/// `kv_cache>0.9,ttft_p99>2s,waiting>=10,prefix_hit_rate<20%`: durations
/// become seconds, percentages shares; `>=` and `<=` fire at the threshold
/// too (they had been read as `>` and `<`).
pub fn parse_alerts(s: &str) -> Result<Vec<Alert>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, above, value) = if let Some((n, v)) = part.split_once('>') {
            (n, true, v)
        } else if let Some((n, v)) = part.split_once('<') {
            (n, false, v)
        } else {
            bail!("alert '{part}' needs > or <, e.g. kv_cache>0.9 or ttft_p99>2s");
        };
        let name = name.trim();
        if !ALERT_NAMES.contains(&name) {
            bail!("unknown alert figure '{name}'; known: {}", ALERT_NAMES.join(", "));
        }
        let (inclusive, v) = match value.strip_prefix('=') {
            Some(v) => (true, v.trim()),
            None => (false, value.trim()),
        };
        let time = TIME_ALERTS.contains(&name);
        let threshold = if let Some(p) = v.strip_suffix('%') {
            if time {
                bail!("alert '{part}': {name} is a time, not a share; give it with its unit, e.g. {name}>500ms");
            }
            p.trim().parse::<f64>().map(|x| x / 100.0).ok()
        } else if let Ok(x) = v.parse::<f64>() {
            if time {
                // A bare number was read as seconds: `ttft_p99>200` meant 200 ms
                // more often than 200 s, and would never fire.
                bail!("alert '{part}': {name} is a time; give its unit, e.g. {name}>{v}ms or {name}>{v}s");
            }
            Some(x)
        } else if time {
            humantime::parse_duration(v).ok().map(|d| d.as_secs_f64())
        } else {
            None
        };
        let threshold = threshold.filter(|t| t.is_finite()).ok_or_else(|| {
            if time {
                anyhow!("alert '{part}': '{v}' is not a time, e.g. {name}>500ms")
            } else {
                anyhow!("alert '{part}': '{v}' is not a finite number or a percentage, e.g. {name}>0.9 or {name}>90%")
            }
        })?;
        // A share past its range would never fire, and the watch would pass in silence.
        let never = match (above, inclusive) {
            (true, false) => threshold >= 1.0,
            (true, true) => threshold > 1.0,
            (false, false) => threshold <= 0.0,
            (false, true) => threshold < 0.0,
        };
        if SHARE_ALERTS.contains(&name) && never {
            bail!(
                "alert '{part}' can never fire: {name} is a share from 0 to 1 (0% to 100%); give a threshold in that \
                 range, e.g. {name}>0.9 or {name}>90%"
            );
        }
        out.push(Alert { name: name.into(), above, inclusive, threshold });
    }
    if out.is_empty() {
        bail!("--alert '{s}' names no alert; give FIGURE>VALUE or FIGURE<VALUE, e.g. kv_cache>0.9,ttft_p99>2s");
    }
    Ok(out)
}

/// The alert figures that are shares, from 0 to 1.
const SHARE_ALERTS: &[&str] = &["kv_cache", "prefix_hit_rate", "gpu_util"];

/// The alert figures that are times: their thresholds take a unit.
const TIME_ALERTS: &[&str] =
    &["ttft_p50", "ttft_p99", "itl_p50", "itl_p99", "e2e_p99", "queue_p99", "probe_ttft", "probe_tpot"];

/// One model's probes in an interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
struct ModelProbes {
    ttft_p50_s: Option<f64>,
    tpot_p50_s: Option<f64>,
    ok: usize,
    failed: usize,
}

/// The probes of each model they named, in name order (empty when none names one).
fn probes_by_model(probes: &[RequestRecord]) -> BTreeMap<String, ModelProbes> {
    let mut groups: BTreeMap<&str, Vec<&RequestRecord>> = BTreeMap::new();
    for r in probes {
        if let Some(m) = &r.model {
            groups.entry(m).or_default().push(r);
        }
    }
    groups
        .into_iter()
        .map(|(m, rs)| {
            let ok = rs.iter().filter(|r| r.outcome.is_success()).count();
            let p = ModelProbes {
                ttft_p50_s: probe_p50(rs.iter().copied(), |r| r.ttft()),
                tpot_p50_s: probe_p50(rs.iter().copied(), |r| r.tpot()),
                ok,
                failed: rs.len() - ok,
            };
            (m.to_owned(), p)
        })
        .collect()
}

/// The median of `metric` over the probes that succeeded, in seconds.
fn probe_p50<'a>(
    probes: impl IntoIterator<Item = &'a RequestRecord>,
    metric: impl Fn(&RequestRecord) -> Option<Duration>,
) -> Option<f64> {
    let mut v: Vec<f64> =
        probes.into_iter().filter(|r| r.outcome.is_success()).filter_map(metric).map(|d| d.as_secs_f64()).collect();
    Distribution::from_samples(&mut v, &[50.0]).p(50.0)
}

/// Why the last probe that failed failed, `kind: message`, its secrets
/// masked and cut to 300 characters (a failed probe had been only counted).
fn last_failure(probes: &[RequestRecord]) -> Option<String> {
    probes.iter().rev().find_map(|r| match &r.outcome {
        goodput_core::Outcome::Failed { kind, message } => {
            let said = goodput_core::util::redact::scrub(&format!("{kind}: {message}")).into_owned();
            Some(match said.char_indices().nth(300) {
                Some((at, _)) => format!("{}…", &said[..at]),
                None => said,
            })
        }
        _ => None,
    })
}

/// The figures of one interval that alerts can name.
fn figures(w: &WindowSummary, probes: &[RequestRecord]) -> Vec<(&'static str, Option<f64>)> {
    let gauge = |g: GaugeSignal| w.gauges.get(&g).and_then(|d| d.max);
    // A counter that went down (a restart) in the interval is not judged.
    let counted = |c: CounterSignal| w.counters.get(&c).filter(|c| c.resets == 0);
    let hist = |h: HistogramSignal, q: fn(&goodput_core::prometheus::scrape::HistogramSummary) -> Option<f64>| {
        w.histograms.get(&h).and_then(q)
    };
    vec![
        ("kv_cache", gauge(GaugeSignal::KvCacheUsage)),
        ("waiting", gauge(GaugeSignal::WaitingRequests)),
        ("running", gauge(GaugeSignal::RunningRequests)),
        ("prefix_hit_rate", w.prefix_cache_hit_rate),
        ("preemptions", counted(CounterSignal::Preemptions).map(|c| c.delta)),
        ("gen_tokens_per_s", counted(CounterSignal::GenerationTokens).and_then(|c| c.rate_per_s)),
        ("ttft_p50", hist(HistogramSignal::Ttft, |h| h.p50)),
        ("ttft_p99", hist(HistogramSignal::Ttft, |h| h.p99)),
        ("itl_p50", hist(HistogramSignal::Itl, |h| h.p50)),
        ("itl_p99", hist(HistogramSignal::Itl, |h| h.p99)),
        ("e2e_p99", hist(HistogramSignal::E2e, |h| h.p99)),
        ("queue_p99", hist(HistogramSignal::Queue, |h| h.p99)),
        ("gpu_util", gauge(GaugeSignal::GpuUtilization)),
        ("gpu_power", gauge(GaugeSignal::GpuPower)),
        ("probe_ttft", probe_p50(probes, |r| r.ttft())),
        ("probe_tpot", probe_p50(probes, |r| r.tpot())),
        ("probe_errors", Some(probes.iter().filter(|r| r.outcome.failure_kind().is_some()).count() as f64)),
    ]
}

/// One interval's line: the server's window (`None` when its metrics were
/// not read then) and the probes.
fn line(
    t: Duration,
    w: Option<&WindowSummary>,
    non_finite: &[String],
    probes: &[RequestRecord],
    by_model: &BTreeMap<String, ModelProbes>,
) -> String {
    let mut parts = match w {
        Some(w) => server_parts(w, non_finite),
        None => vec!["no server metrics".to_string()],
    };
    probe_parts(&mut parts, probes, by_model);
    format!("[{:>7.1}s] {}", t.as_secs_f64(), parts.join(" · "))
}

/// What the server's window says, in the words of an interval's line;
/// `non_finite`, the known series the last scrape read as NaN or ±Inf.
fn server_parts(w: &WindowSummary, non_finite: &[String]) -> Vec<String> {
    let mut parts = vec![w.engine.map(|e| format!("{e:?}").to_lowercase()).unwrap_or_else(|| "server".into())];
    let g = |s: GaugeSignal| w.gauges.get(&s).and_then(|d| d.max);
    if let Some(v) = g(GaugeSignal::RunningRequests) {
        parts.push(format!("run {v:.0}"));
    }
    if let Some(v) = g(GaugeSignal::WaitingRequests) {
        parts.push(format!("wait {v:.0}"));
    }
    if let Some(v) = g(GaugeSignal::KvCacheUsage) {
        // Of the cache's tokens where the server says how many.
        let of = g(GaugeSignal::KvCacheTokens).map(|t| format!(" of {t:.0} tokens")).unwrap_or_default();
        parts.push(format!("KV {:.0}%{of}", v * 100.0));
    }
    if let Some(v) = w.prefix_cache_hit_rate {
        parts.push(format!("hit {:.1}%", v * 100.0));
    }
    for (c, label) in [(CounterSignal::GenerationTokens, "gen"), (CounterSignal::PromptTokens, "prompt")] {
        match w.counters.get(&c) {
            // A counter that went down (a restart) says nothing of the rate
            // between the two scrapes.
            Some(c) if c.resets > 0 => parts.push(format!("{label} reset")),
            Some(c) => parts.extend(c.rate_per_s.map(|r| format!("{label} {r:.0} tok/s"))),
            None => {}
        }
    }
    match w.counters.get(&CounterSignal::Preemptions) {
        Some(p) if p.resets > 0 => parts.push("preempt reset".into()),
        Some(p) => parts.push(format!("preempt {:.0}", p.delta)),
        None => {}
    }
    for (h, label) in [(HistogramSignal::Ttft, "TTFT"), (HistogramSignal::Itl, "ITL")] {
        if let Some(s) = w.histograms.get(&h).filter(|s| s.count > 0.0) {
            let f = |v: Option<f64>| v.map(|x| format!("{:.0}", x * 1e3)).unwrap_or("-".into());
            parts.push(format!("{label} p50 {} p99 {} ms", f(s.p50), f(s.p99)));
        }
    }
    if let Some(v) = g(GaugeSignal::GpuUtilization) {
        parts.push(format!("GPU {:.0}%", v * 100.0));
    }
    if let Some(v) = g(GaugeSignal::GpuPower) {
        parts.push(format!("{v:.0} W"));
    }
    if parts.len() == 1 {
        // The engine's name alone had been the whole line; known series
        // without a number had read as none at all.
        match non_finite {
            [] => parts.push(NO_KNOWN_SIGNAL.to_string()),
            names => parts.push(no_number(names)),
        }
    }
    parts
}

/// An interval's line where the metrics held nothing it shows.
const NO_KNOWN_SIGNAL: &str = "no known signal in its metrics (goodput reads vLLM's vllm:*, SGLang's sglang:*, TGI's \
     tgi_*, llama.cpp's llamacpp:*, Triton's nv_* and DCGM's DCGM_FI_* families: running and waiting requests, KV \
     cache, token counters, TTFT and ITL histograms, GPU use and power)";

/// What is said of known series that held no number (NaN, +Inf or -Inf),
/// which no signal takes.
fn no_number(names: &[String]) -> String {
    let more = if names.len() >= crate::scrape::NON_FINITE_NAMED { ", …" } else { "" };
    format!(
        "no known signal with a number: {}{more} read NaN or ±Inf, which goodput leaves out (is the server's \
         metrics exporter broken, or the engine not yet started?)",
        shown(&names.join(", "))
    )
}

/// The probes' part of an interval's line.
fn probe_parts(parts: &mut Vec<String>, probes: &[RequestRecord], by_model: &BTreeMap<String, ModelProbes>) {
    if !probes.is_empty() {
        let ok = probes.iter().filter(|r| r.outcome.is_success()).count();
        let ms = |v: Option<f64>| v.map(|x| format!("{:.0}", x * 1e3)).unwrap_or("-".into());
        parts.push(format!(
            "probe TTFT {} TPOT {} ms ({ok} ok, {} failed)",
            ms(probe_p50(probes, |r| r.ttft())),
            ms(probe_p50(probes, |r| r.tpot())),
            probes.len() - ok
        ));
        if let Some(why) = last_failure(probes) {
            parts.push(format!("last probe failure: {}", shown(&why)));
        }
        if by_model.len() > 1 {
            let each: Vec<String> =
                by_model.iter().map(|(m, p)| format!("{m} {}/{}", ms(p.ttft_p50_s), ms(p.tpot_p50_s))).collect();
            parts.push(format!("by model TTFT/TPOT ms: {}", each.join(", ")));
        }
    }
}

/// What [`scraping`] sets up.
struct Scraping {
    /// The server's root.
    base: String,
    /// The HTTP client the scraper and the probes share.
    http: reqwest::Client,
    scraper: Scraper,
    /// `<url>/metrics` where the metrics URL was not given but taken by
    /// default: checked once the server answers ([`find_metrics`]).
    default: Option<String>,
}

/// The server's root and the metrics URLs to scrape (`<url>/metrics`, or
/// `--url` itself where it names them, and every `--metrics-url`), with the
/// HTTP client the scraper and the probes share and the scraper itself; the
/// key and URLs are registered as secrets to redact.
fn scraping(a: &MonitorArgs) -> Result<Scraping> {
    let url = a.url.as_deref().unwrap_or_default();
    crate::target::refuse_fragment(url)?;
    // The query of --url (a gateway's key) goes on the end of every path.
    let (path, query) = url.split_at(url.find(['?', '#']).unwrap_or(url.len()));
    let (base, metrics, default) = match path.trim_end_matches('/').strip_suffix("/metrics") {
        Some(root) => (normalize_base(&format!("{root}{query}")), url.to_string(), false),
        None => {
            let b = normalize_base(url);
            (b.clone(), join_url(&b, "/metrics"), true)
        }
    };
    let probe_client = Client::new(
        ClientConfig {
            base_url: base.clone(),
            api_key: a.api_key.clone(),
            body: BodyOptions::default(),
            timeout: Duration::from_secs(60),
            transport: Default::default(),
            stamps: Default::default(),
            key_header: a.key_header.resolve(a.api, &base),
            headers: Vec::new(),
            cancel: None,
            max_buffer: a.max_buffer,
        },
        None,
    )?;
    let http = probe_client.http().clone();
    let mut secrets = goodput_load::client::secrets_of(a.api_key.as_deref(), &[], &a.header, url);
    a.metrics_url.iter().for_each(|u| secrets.add_url(u));
    goodput_core::util::redact::set_global(secrets);
    let default = default.then(|| metrics.clone());
    let mut urls = vec![metrics];
    urls.extend(a.metrics_url.iter().cloned());
    let scraper = Scraper::new(http.clone(), urls, a.interval, a.max_buffer);
    Ok(Scraping { base, http, scraper, default })
}

/// Where the server's Prometheus text is, when the metrics URL was taken by
/// default (`<url>/metrics`): `Some(None)` where that one serves it (or
/// nothing else does), `Some(Some(url))` where it serves none and
/// TensorRT-LLM's `<url>/prometheus/metrics` does (trtllm-serve serves JSON
/// at `/metrics`), and `None` while the server has not answered at all (asked
/// again at the next scrape). As `bench` and `sweep` look for it.
async fn find_metrics(
    http: &reqwest::Client,
    base: &str,
    default: &str,
    a: &MonitorArgs,
    origin: Instant,
) -> Option<Option<String>> {
    let probe = |url: &str| Scraper::new(http.clone(), vec![url.to_string()], a.interval, a.max_buffer);
    match probe(default).scrape_at(origin).await {
        Ok((_, s)) if s.families > 0 => return Some(None),
        // Not up yet: the scrape says so, and it is asked again.
        Err(ScrapeError::Fetch { .. }) => return None,
        // So slow that it kept the probe waiting: not probed again, as bench
        // does not probe such a server at the second path.
        Err(ScrapeError::Slow { .. }) => return Some(None),
        // Answered, with no Prometheus text goodput reads, or an error status.
        _ => {}
    }
    let other = join_url(base, "/prometheus/metrics");
    match probe(&other).scrape_at(origin).await {
        Ok((_, s)) if s.families > 0 => Some(Some(other)),
        _ => Some(None),
    }
}

pub async fn monitor(a: MonitorArgs) -> Result<ExitCode> {
    if let Some(rate) = a.probe_rate {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("--probe-rate must be a positive number of requests per second");
        }
        // Probes watch what users get; they are not the load (1e9 a second
        // had been taken, and sent as fast as the client could).
        if rate > MAX_PROBE_RATE {
            bail!(
                "--probe-rate {rate} is more than a watch needs (at most {MAX_PROBE_RATE} a second): probes show \
                 what users get now, without loading the server; to load it, run goodput bench --rate {rate}"
            );
        }
    }
    let alerts = match &a.alert {
        Some(s) => parse_alerts(s)?,
        None => Vec::new(),
    };
    if let Some(al) = alerts.iter().find(|al| al.name.starts_with("probe_")).filter(|_| a.probe_rate.is_none()) {
        bail!(
            "alert on {} watches the probes, and none are sent: add --probe-rate (e.g. --probe-rate 0.2), or drop the alert",
            al.name
        );
    }
    if a.interval.is_zero() {
        bail!("--interval must be longer than zero");
    }
    // Taken over before anything that can wait (the model's discovery, a
    // scrape), so that a signal from the first moment is caught.
    let stop = tokio_util::sync::CancellationToken::new();
    let abort = tokio_util::sync::CancellationToken::new();
    let signals = crate::interrupt::StopSignals::listen();
    tokio::spawn(stop_on_signals(signals, stop.clone(), abort.clone()));
    tokio::select! {
        biased;
        () = abort.cancelled() => Ok(ExitCode::from(130)),
        r = watch(a, alerts, stop) => r,
    }
}

/// Ctrl-C or SIGTERM: once, end the watch (a scrape in flight is given up)
/// and exit as the watch would have; twice, exit now, whatever is still
/// waiting (the model's discovery, a record's write). The first had waited
/// for a scrape that never answered, and the second was ignored.
async fn stop_on_signals(
    mut signals: crate::interrupt::StopSignals,
    stop: tokio_util::sync::CancellationToken,
    abort: tokio_util::sync::CancellationToken,
) {
    let Some(name) = signals.next().await else { return };
    goodput_core::tell!("\nstopping ({name}) (Ctrl-C or SIGTERM again to stop now)");
    stop.cancel();
    if let Some(again) = signals.next().await {
        goodput_core::tell!("stopping now ({again})");
        abort.cancel();
    }
}

/// The watch itself, ended early by `stop`.
async fn watch(a: MonitorArgs, alerts: Vec<Alert>, stop: tokio_util::sync::CancellationToken) -> Result<ExitCode> {
    let Scraping { base, http, mut scraper, mut default } = scraping(&a)?;
    let origin = Instant::now();

    // Probes: a slow open loop of small real requests.
    let probes: Arc<Mutex<Vec<RequestRecord>>> = Arc::default();
    let api = a.api;
    let live = Arc::new(LiveMetrics::new(
        api.operation(),
        a.model.as_deref().unwrap_or(""),
        &goodput_core::util::redact::redact_url(&base),
    ));
    let control = Control::default();
    if let Some(rate) = a.probe_rate {
        let sink = ProbeSink { records: probes.clone(), live: live.clone(), control: control.clone(), origin };
        // The model's discovery may wait its 10 s on a silent server: a
        // stop ends it as it ends a scrape (it had taken a second signal).
        tokio::select! {
            biased;
            _ = stop.cancelled() => return Ok(ExitCode::SUCCESS),
            r = start_probes(&a, rate, &base, &http, sink) => r?,
        }
    }
    if let Some(addr) = a.prometheus_listen {
        crate::prometheus::serve_live(addr, live.clone()).await?;
    }
    let mut record = match &a.record {
        Some(p) => {
            crate::output::check_file(p, "--record")?;
            Some(std::io::BufWriter::new(
                std::fs::File::create(p).with_context(|| format!("cannot create {}", p.display()))?,
            ))
        }
        None => None,
    };

    let end = a.duration.map(|d| origin + d);
    let ended = || end.is_some_and(|e| Instant::now() >= e);
    let probing = a.probe_rate.is_some();
    // The last scrape that answered: the start of the next interval's window.
    let mut prev: Option<(Duration, Signals)> = None;
    // Whether the first tick, the start of the first interval, has passed.
    let mut started = false;
    let mut fired_any = false;
    let mut scraped_any = false;
    let mut probed_any = false;
    let mut unjudged: Vec<&str> = Vec::new();
    // Each endpoint failing now, with what was said of it: said again only
    // when it changes, and when the endpoint answers again.
    let mut down: BTreeMap<String, String> = BTreeMap::new();
    let mut told_unrecognised = false;
    // The histograms of too many bounds said so far.
    let mut told_coarsened = std::collections::BTreeSet::new();
    // The known series the last scrape that answered read without a number.
    let mut non_finite: Vec<String> = Vec::new();
    goodput_core::tell!(
        "goodput monitor → {} every {}",
        goodput_core::util::redact::scrub(&scraper.urls.join(", ")),
        goodput_core::util::duration_text(a.interval)
    );
    let mut tick = tokio::time::interval(a.interval);
    loop {
        // Stop first: a tick already due must not start another scrape.
        tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            _ = tick.tick() => {}
        }
        // The default /metrics checked once the server answers: where it
        // serves no Prometheus text and /prometheus/metrics does, the
        // watch reads that from now on.
        if let Some(d) = default.clone() {
            let found = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                f = find_metrics(&http, &base, &d, &a, origin) => f,
            };
            if let Some(found) = found {
                default = None;
                if let Some(other) = found {
                    goodput_core::tell!(
                        "[{:>7.1}s] note: {} serves no Prometheus text; the server's metrics are read at {} (where \
                         TensorRT-LLM's trtllm-serve serves them)",
                        origin.elapsed().as_secs_f64(),
                        shown(&goodput_core::util::redact::redact_url(&d)),
                        shown(&goodput_core::util::redact::redact_url(&other))
                    );
                    scraper.urls[0] = other;
                }
            }
        }
        // A scrape may wait for up to its timeout (the interval, or 2 s):
        // a stop ends it rather than waiting for it.
        let scraped = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            r = scraper.scrape_at(origin) => r,
        };
        let (cur, failed) = match scraped {
            Ok((t, scraped)) => {
                if scraped.signals.is_empty() && !told_unrecognised {
                    let why = match scraped.non_finite.as_slice() {
                        [] => unrecognised(&scraped),
                        names => no_number(names),
                    };
                    goodput_core::tell!("[{:>7.1}s] note: {why}", t.as_secs_f64());
                }
                for c in &scraped.signals.coarsened {
                    // Said once a histogram: its quantiles stay absent after.
                    if told_coarsened.insert(c.signal) {
                        goodput_core::tell!("[{:>7.1}s] warning: {}", t.as_secs_f64(), c.warning());
                    }
                }
                non_finite = scraped.non_finite;
                // Said once: an endpoint that flaps would say it again and again.
                told_unrecognised |= scraped.signals.is_empty();
                (Some((t, scraped.signals)), scraped.failed)
            }
            Err(e) => (None, e.into_each()),
        };
        tell_failures(&mut down, failed, origin.elapsed(), cur.is_some(), probing);
        scraped_any |= cur.is_some();
        if cur.is_none() && !probing {
            if a.once {
                return Ok(ExitCode::from(2));
            }
            if ended() {
                // --duration holds while the server is down too; a watch
                // that never read it says so in its exit.
                break;
            }
            continue;
        }
        if !started {
            // The first tick starts the first interval: of the scrapes, and of the probes.
            started = true;
            prev = cur;
            if ended() {
                break;
            }
            continue;
        }
        // The window from the last scrape that answered to this one; none
        // when this one failed (the next that answers spans the gap).
        let w = match (&prev, &cur) {
            (Some(p), Some(c)) => Some(summarize_points([(p.0, &p.1), (c.0, &c.1)].into_iter(), p.0, c.0)),
            _ => None,
        };
        let t1 = cur.as_ref().map(|c| c.0).unwrap_or_else(|| origin.elapsed());
        if cur.is_some() {
            prev = cur;
        }
        let batch: Vec<RequestRecord> = std::mem::take(&mut *probes.lock().unwrap_or_else(|e| e.into_inner()));
        probed_any |= batch.iter().any(|r| r.outcome.is_success());
        if w.is_some() || !batch.is_empty() {
            let by_model = probes_by_model(&batch);
            crate::output::say(&format!("{}\n", line(t1, w.as_ref(), &non_finite, &batch, &by_model)));
            let w = w.unwrap_or_default();
            let figs = figures(&w, &batch);
            let fired = fired_alerts(&alerts, &figs);
            for al in &alerts {
                let absent = figs.iter().find(|(n, _)| *n == al.name).is_none_or(|(_, v)| v.is_none());
                if absent && !unjudged.contains(&al.name.as_str()) {
                    unjudged.push(&al.name);
                    goodput_core::tell!(
                        "[{:>7.1}s] note: alert on {} was not judged: the interval had no {} (the server exports none, or nothing happened then)",
                        t1.as_secs_f64(),
                        al.name,
                        al.name
                    );
                }
            }
            for f in &fired {
                crate::output::say(&format!("ALERT {f}\n"));
            }
            fired_any |= !fired.is_empty();
            if let (Some(out), Some(path)) = (record.as_mut(), a.record.as_ref()) {
                // A record that cannot be written would lose every line in
                // silence (a full disk had exited 0 with nothing kept).
                write_interval(out, t1, &figs, &fired, &by_model, &batch, &w).with_context(|| {
                    format!(
                        "cannot write --record {}: the intervals before this one are kept in it, this one and later \
                         ones are not",
                        path.display()
                    )
                })?;
            }
        }
        if a.once || ended() {
            break;
        }
    }
    control.stop.cancel();
    control.abort.cancel();
    if !scraped_any && !probed_any && !stop.is_cancelled() {
        bail!(
            "no scrape of {} succeeded{} in the {} watched: is the server up, and its metrics at that address (--metrics-url)?",
            goodput_core::util::redact::scrub(&scraper.urls.join(", ")),
            if probing { ", and no probe was answered," } else { "" },
            goodput_core::util::duration_text(a.duration.unwrap_or_default())
        );
    }
    // A bounded watch (--once, --duration) in which an alert fired exits 4,
    // for cron and CI: a --duration watch had exited 0 whatever fired.
    Ok(if (a.once || a.duration.is_some()) && fired_any { ExitCode::from(4) } else { ExitCode::SUCCESS })
}

/// Says which endpoints failed, each when it starts failing or fails
/// otherwise, and which answer again; `others_answered`, whether any
/// endpoint answered this scrape.
fn tell_failures(
    down: &mut BTreeMap<String, String>,
    failed: Vec<ScrapeError>,
    t: Duration,
    others_answered: bool,
    probing: bool,
) {
    let now: BTreeMap<String, String> =
        failed.into_iter().map(|e| (e.url().unwrap_or_default().to_string(), shown(&e.to_string()))).collect();
    let going_on = match (others_answered, probing) {
        (true, _) => "; the other endpoints are read, and it is tried at every interval",
        (false, true) => "; the probes go on, and it is tried at every interval",
        (false, false) => "",
    };
    for (url, e) in &now {
        if down.get(url) != Some(e) {
            goodput_core::tell!("[{:>7.1}s] scrape failed: {e}{going_on}", t.as_secs_f64());
        }
    }
    for url in down.keys().filter(|u| !now.contains_key(*u)) {
        goodput_core::tell!("[{:>7.1}s] {} answers again", t.as_secs_f64(), shown(url));
    }
    *down = now;
}

/// A scrape that answered with nothing goodput knows, in words: what each
/// endpoint said it sent, and what was read of it.
fn unrecognised(s: &Scraped) -> String {
    let each: Vec<String> = s
        .answered
        .iter()
        .map(|(url, kind)| format!("{} ({})", shown(url), shown(kind.as_deref().unwrap_or("no content type"))))
        .collect();
    format!(
        "{} answered no Prometheus metric goodput knows (metric families: {}, unreadable lines: {}): \
         is that the server's metrics endpoint? give it with --metrics-url (vLLM, SGLang and TGI serve it at /metrics)",
        each.join(", "),
        s.families,
        s.parse_errors
    )
}

/// Where the probes' records go, and the control and clock they run under.
struct ProbeSink {
    records: Arc<Mutex<Vec<RequestRecord>>>,
    live: Arc<LiveMetrics>,
    control: Control,
    origin: Instant,
}

/// Starts the probes: a slow open loop of small real requests at `rate`
/// per second, spread over the models given (or the one the server lists),
/// each recorded into the sink's records and live metrics.
/// The most probes a second `monitor` sends.
const MAX_PROBE_RATE: f64 = 100.0;

async fn start_probes(a: &MonitorArgs, rate: f64, base: &str, http: &reqwest::Client, sink: ProbeSink) -> Result<()> {
    let api = a.api;
    debug_assert!(rate.is_finite() && rate > 0.0 && rate <= MAX_PROBE_RATE, "checked by monitor");
    // Several models (LoRA adapters): the probes are spread over them.
    let mut models = crate::common::names(a.model.as_deref());
    if models.is_empty() {
        let headers = request_headers(api, a.api_key.as_deref(), a.key_header.resolve(api, base), &a.header)?;
        models.push(crate::target::discover_model(http, base, api, &headers, a.max_buffer).await?);
    }
    let body = BodyOptions {
        api,
        model: models[0].clone(),
        models: if models.len() > 1 { models } else { Vec::new() },
        stream: !api.pools(),
        include_usage: true,
        ..Default::default()
    };
    let client = Arc::new(Client::new(
        ClientConfig {
            base_url: base.to_owned(),
            api_key: a.api_key.clone(),
            body,
            timeout: Duration::from_secs(60),
            transport: Default::default(),
            stamps: Default::default(),
            key_header: a.key_header.resolve(api, base),
            headers: a.header.clone(),
            cancel: None,
            max_buffer: a.max_buffer,
        },
        None,
    )?);
    let plan = LoadPlan {
        requests: None,
        duration: Some(a.duration.unwrap_or(Duration::from_secs(365 * 24 * 3600))),
        warmup: 0,
        warmup_time: std::time::Duration::ZERO,
        concurrency: Some(8),
        rate: Some((rate, Arrival::Poisson)),
        trace: None,
        trace_source: None,
        ramp_up: std::time::Duration::ZERO,
        sessions: None,
        seed: 0,
        grace: Duration::from_secs(1),
        shard: None,
        user_steps: Vec::new(),
        cancel: None,
    };
    let workload = Arc::new(Workload::Synthetic {
        input: LengthDist::Fixed(32),
        output: LengthDist::Fixed(16),
        seed: 0,
        tokenizer: None,
        shared_prefix: None,
    });
    let ProbeSink { records: sink_probes, live: sink_live, control: c, origin } = sink;
    tokio::spawn(async move {
        let sink = move |r: &RequestRecord| {
            sink_live.observe(r);
            sink_probes.lock().unwrap_or_else(|e| e.into_inner()).push(r.clone());
        };
        let _ = goodput_load::run_at(&plan, client, workload, c, sink, origin).await;
    });
    Ok(())
}

/// The alerts whose figure crossed its threshold this interval, in words.
fn fired_alerts(alerts: &[Alert], figs: &[(&str, Option<f64>)]) -> Vec<String> {
    let mut fired = Vec::new();
    for al in alerts {
        if let Some(Some(v)) = figs.iter().find(|(n, _)| *n == al.name).map(|(_, v)| *v) {
            let crossed = match (al.above, al.inclusive) {
                (true, false) => v > al.threshold,
                (true, true) => v >= al.threshold,
                (false, false) => v < al.threshold,
                (false, true) => v <= al.threshold,
            };
            if crossed {
                let op = match (al.above, al.inclusive) {
                    (true, false) => ">",
                    (true, true) => ">=",
                    (false, false) => "<",
                    (false, true) => "<=",
                };
                fired.push(format!("{} = {v:.4} {op} {}", al.name, al.threshold));
            }
        }
    }
    fired
}

/// One interval as a JSON line of `--record`, flushed, so that the lines
/// written before a failure stay in the file.
fn write_interval(
    out: &mut impl Write,
    t: Duration,
    figs: &[(&str, Option<f64>)],
    fired: &[String],
    by_model: &impl serde::Serialize,
    probes: &[RequestRecord],
    w: &WindowSummary,
) -> std::io::Result<()> {
    let v: Value = json!({
        "t_s": t.as_secs_f64(),
        "figures": figs.iter().map(|(n, v)| (n.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "alerts": fired,
        "probes_by_model": by_model,
        "probe_last_failure": last_failure(probes),
        "window": w,
    });
    serde_json::to_writer(&mut *out, &v)?;
    out.write_all(b"\n")?;
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alert_specs() {
        let a = parse_alerts("kv_cache>0.9, ttft_p99>2s,waiting>10,prefix_hit_rate<20%,probe_ttft>500ms").unwrap();
        assert_eq!(a[0], Alert { name: "kv_cache".into(), above: true, inclusive: false, threshold: 0.9 });
        assert_eq!(a[1].threshold, 2.0);
        assert_eq!(a[3], Alert { name: "prefix_hit_rate".into(), above: false, inclusive: false, threshold: 0.2 });
        assert_eq!(a[4].threshold, 0.5);
        assert!(parse_alerts("kv=0.9").unwrap_err().to_string().contains("> or <"));
        assert!(parse_alerts("latency>1").unwrap_err().to_string().contains("known:"));
        assert!(parse_alerts("kv_cache>lots").is_err());
        // A time without its unit, a share of a time, a number that is not
        // finite, and nothing at all are refused, each with its fix.
        assert!(parse_alerts("ttft_p99>200").unwrap_err().to_string().contains("ttft_p99>200ms"));
        assert!(parse_alerts("probe_ttft>50%").unwrap_err().to_string().contains("unit"));
        assert!(parse_alerts("kv_cache>NaN").unwrap_err().to_string().contains("finite"));
        assert!(parse_alerts("kv_cache>inf").is_err());
        assert!(parse_alerts(" , ").unwrap_err().to_string().contains("names no alert"));
    }

    /// `>=` and `<=` fire at the threshold itself, `>` and `<` do not (the
    /// `=` had been dropped, and `waiting>=10` did not fire at 10).
    #[test]
    fn inclusive_alerts_fire_at_their_threshold() {
        let a = parse_alerts("waiting>=10,prefix_hit_rate<=20%,running>4,kv_cache<0.5, ttft_p99 >= 2s").unwrap();
        assert_eq!(a[0], Alert { name: "waiting".into(), above: true, inclusive: true, threshold: 10.0 });
        assert_eq!(a[1], Alert { name: "prefix_hit_rate".into(), above: false, inclusive: true, threshold: 0.2 });
        assert!(!a[2].inclusive && !a[3].inclusive && a[4].inclusive && a[4].threshold == 2.0);
        let figs = [
            ("waiting", Some(10.0)),
            ("prefix_hit_rate", Some(0.2)),
            ("running", Some(4.0)),
            ("kv_cache", Some(0.5)),
            ("ttft_p99", Some(2.0)),
        ];
        let fired = fired_alerts(&a, &figs);
        assert_eq!(fired.len(), 3, "{fired:?}");
        assert!(fired[0].starts_with("waiting = 10.0000 >= 10"), "{fired:?}");
        assert!(fired[1].starts_with("prefix_hit_rate = 0.2000 <= 0.2"), "{fired:?}");
        assert!(fired[2].starts_with("ttft_p99 = 2.0000 >= 2"), "{fired:?}");
        let below = fired_alerts(&a, &[("waiting", Some(9.0)), ("prefix_hit_rate", Some(0.21))]);
        assert!(below.is_empty(), "{below:?}");
    }

    /// The interval's line gives the KV cache's use, of its tokens where
    /// the server says how many (vLLM's `cache_config_info`).
    #[test]
    fn the_kv_use_is_of_the_cache_s_tokens_where_the_server_says() {
        use goodput_core::prometheus::scrape::{parse, summarize};
        let window = |text: &str| {
            let scrapes: Vec<_> = (0..2).map(|i| (Duration::from_secs(i), parse(text))).collect();
            summarize(&scrapes, Duration::ZERO, Duration::from_secs(1))
        };
        let sized = window(
            "vllm:kv_cache_usage_perc 0.45\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1000\"} 1\n",
        );
        assert!(server_parts(&sized, &[]).contains(&"KV 45% of 16000 tokens".to_string()));
        let bare = window("vllm:kv_cache_usage_perc 0.45\n");
        assert!(server_parts(&bare, &[]).contains(&"KV 45%".to_string()));
    }

    /// A share's threshold past 0 to 1 can never fire, and is refused
    /// saying the range (`kv_cache>1.5` had been taken, and never fired).
    #[test]
    fn share_alerts_that_can_never_fire_are_refused() {
        for never in ["kv_cache>1.5", "kv_cache>1", "gpu_util>150%", "prefix_hit_rate<0", "kv_cache<=-0.1"] {
            let e = parse_alerts(never).unwrap_err().to_string();
            assert!(e.contains("can never fire") && e.contains("from 0 to 1 (0% to 100%)"), "{never}: {e}");
        }
        for can in ["kv_cache>=1", "kv_cache>0.99", "gpu_util>90%", "prefix_hit_rate<=0", "prefix_hit_rate<0.1"] {
            assert!(parse_alerts(can).is_ok(), "{can}");
        }
    }
}
