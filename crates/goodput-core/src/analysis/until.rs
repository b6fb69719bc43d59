//! Stopping a run when its answer is known (docs/metrics.md, "Stopping
//! when the answer is known"): `--until` targets, each a figure whose
//! interval must come within a half-width, and `--stop-on-slo`, which ends
//! a run once every percentile objective's interval (and the attainment's,
//! with per-request limits, and each mean score's, with run-level quality
//! objectives) lies wholly on one side of its limit. Both are
//! checked on the completed measured records at looks spaced geometrically
//! ([`FIRST_LOOK`], then every [`LOOK_GROWTH`] times as many). The rule is
//! pure and has no clock: a live run's record sink feeds it each record as
//! it completes, and says why the run stopped ([`Stop`]) in the result.

use crate::analysis::interval::{
    percentile_interval_dependent, percentile_objective_bounds_dependent, rate_interval, wilson_dependent,
    wilson_share, Interval, BATCHES,
};
use crate::analysis::metrics::ms;
use crate::analysis::slo::{parse_limit, Slo, SloMetric};
use crate::analysis::stats::percentile;
use crate::doc::record::{Outcome, RequestRecord};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The first look, in measured completed requests: below it no percentile
/// past the median has an interval worth judging.
pub const FIRST_LOOK: u64 = 50;
/// Each look after the first comes once this many times as many measured
/// requests have completed: a run of n requests is looked at about
/// log(n / 50) / log(1.25) times (31 looks by 50,000), so a run overshoots
/// the count its rule needed by at most a quarter, and the looks are few
/// enough to spend the error rate over (see [`decision_confidence`]).
pub const LOOK_GROWTH: f64 = 1.25;

/// A run's length when `--until` or `--stop-on-slo` is given without
/// `--requests` or `--duration`: whichever of these comes first.
pub const DEFAULT_CAP_REQUESTS: u64 = 10_000;
pub const DEFAULT_CAP_DURATION: Duration = Duration::from_secs(600);

/// A figure `--until` can ask an interval of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Figure {
    /// A latency percentile (`ttft:p99`), in milliseconds.
    Percentile { metric: SloMetric, p: f64 },
    /// Completed requests per second over the window so far.
    RequestsPerS,
    /// Output tokens per second over the window so far.
    OutputTokensPerS,
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Percentile { metric, p } => write!(f, "{}:p{p}", metric.as_str()),
            Figure::RequestsPerS => f.write_str("requests_per_s"),
            Figure::OutputTokensPerS => f.write_str("output_tokens_per_s"),
        }
    }
}

impl Figure {
    fn unit(&self) -> &'static str {
        match self {
            Figure::Percentile { .. } => "ms",
            Figure::RequestsPerS => "req/s",
            Figure::OutputTokensPerS => "tok/s",
        }
    }
}

/// How close the interval must come: each of its sides within this of the
/// figure's estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Width {
    /// A share of the estimate (0.05 for `5%`).
    Relative(f64),
    /// In the figure's unit: milliseconds for a percentile, per second for a rate.
    Absolute(f64),
}

/// One `--until` term: `ttft:p99±5%`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Target {
    pub figure: Figure,
    pub width: Width,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.width, self.figure) {
            (Width::Relative(s), _) => write!(f, "{}±{}%", self.figure, s * 100.0),
            (Width::Absolute(a), Figure::Percentile { .. }) => write!(f, "{}±{a}ms", self.figure),
            (Width::Absolute(a), _) => write!(f, "{}±{a}", self.figure),
        }
    }
}

/// `--until`: every target must be met.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Until {
    pub targets: Vec<Target>,
}

impl fmt::Display for Until {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.targets.iter().map(|t| t.to_string()).collect();
        f.write_str(&parts.join(","))
    }
}

/// An `--until` that does not read; each message names the term and the fix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum UntilError {
    #[error("--until is empty: write e.g. 'ttft:p99±5%' or 'e2e:p50±20ms,output_tps±3%'")]
    Empty,
    #[error("--until term '{0}' has no half-width: write e.g. ttft:p99±5% (or ttft:p99+-5%)")]
    NoWidth(String),
    #[error(
        "--until term '{term}': unknown figure '{figure}': use a latency percentile (ttft, tpot, e2e, itl_max or \
         ttfb, e.g. ttft:p99) or a rate (requests_per_s, output_tokens_per_s; rps and output_tps for short)"
    )]
    UnknownFigure { term: String, figure: String },
    #[error("--until term '{term}': '{metric}' needs a percentile: write e.g. {metric}:p99±5%")]
    NoPercentile { term: String, metric: String },
    #[error("--until term '{term}': '{percentile}' is not a percentile above 0 and below 100 like p99 or p99.9")]
    NotAPercentile { term: String, percentile: String },
    #[error(
        "--until term '{term}': '{width}' is not a half-width: write a share above 0 and below 100% (5%) or, for \
         a percentile, a duration (20ms)"
    )]
    BadWidth { term: String, width: String },
    #[error("--until term '{term}': a rate's half-width is a share (3%) or a number per second (0.5), not '{width}'")]
    RateWidth { term: String, width: String },
    #[error("--until names '{0}' twice: keep one")]
    Twice(String),
}

fn parse_figure(term: &str, s: &str) -> Result<Figure, UntilError> {
    let s = s.trim();
    let s = s.strip_prefix("summary.").unwrap_or(s);
    match s.strip_prefix("throughput.").unwrap_or(s) {
        "requests_per_s" | "rps" => return Ok(Figure::RequestsPerS),
        "output_tokens_per_s" | "output_tps" => return Ok(Figure::OutputTokensPerS),
        _ => {}
    }
    // `ttft:p99` as --slo writes it, or `ttft_ms.p99` as --fail-if does.
    let (name, pct) = match s.split_once(':').or_else(|| s.split_once('.')) {
        Some((n, p)) => (n, Some(p)),
        None => (s, None),
    };
    let name = name.strip_suffix("_ms").unwrap_or(name);
    let unknown = || UntilError::UnknownFigure { term: term.into(), figure: s.into() };
    let metric: SloMetric = name.parse().map_err(|_| unknown())?;
    let Some(pct) = pct else {
        return Err(UntilError::NoPercentile { term: term.into(), metric: metric.as_str().into() });
    };
    let p = pct
        .trim()
        .strip_prefix('p')
        .map(|v| v.replace('_', "."))
        // A plain decimal (p1e-320 had been taken, and shown in 300 digits).
        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|p| *p > 0.0 && *p < 100.0)
        .ok_or_else(|| UntilError::NotAPercentile { term: term.into(), percentile: pct.trim().into() })?;
    Ok(Figure::Percentile { metric, p })
}

fn parse_width(term: &str, figure: Figure, s: &str) -> Result<Width, UntilError> {
    let s = s.trim();
    let bad = || UntilError::BadWidth { term: term.into(), width: s.into() };
    if let Some(v) = s.strip_suffix('%') {
        let v: f64 = v.trim().parse().map_err(|_| bad())?;
        return if v > 0.0 && v < 100.0 { Ok(Width::Relative(v / 100.0)) } else { Err(bad()) };
    }
    match figure {
        Figure::Percentile { .. } => parse_limit(s).map(|d| Width::Absolute(ms(d))).map_err(|_| bad()),
        _ => s
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(Width::Absolute)
            .ok_or_else(|| UntilError::RateWidth { term: term.into(), width: s.into() }),
    }
}

impl FromStr for Until {
    type Err = UntilError;

    /// `ttft:p99±5%,e2e:p50±20ms,output_tps±3%` (`+-` for `±`).
    fn from_str(s: &str) -> Result<Self, UntilError> {
        let mut until = Until::default();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (lhs, rhs) = term
                .split_once('±')
                .or_else(|| term.split_once("+-"))
                .ok_or_else(|| UntilError::NoWidth(term.into()))?;
            let figure = parse_figure(term, lhs)?;
            let width = parse_width(term, figure, rhs)?;
            if until.targets.iter().any(|t| t.figure == figure) {
                return Err(UntilError::Twice(figure.to_string()));
            }
            until.targets.push(Target { figure, width });
        }
        if until.targets.is_empty() {
            return Err(UntilError::Empty);
        }
        Ok(until)
    }
}

impl Until {
    /// The terms of several `--until` options together.
    pub fn join(parts: &[String]) -> Result<Until, UntilError> {
        parts.join(",").parse()
    }
}

/// Why a run stopped: `stop` of the result (docs/result.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Every `--until` figure's interval came within its half-width.
    UntilMet,
    /// `--stop-on-slo`: the SLO's verdict was known (`detail` says which side).
    SloDecided,
    /// `--until` or `--stop-on-slo` was given and not met within the run's
    /// limit (its `--requests` or `--duration`, or the default cap).
    Cap,
    /// Every request the run was to send was sent (`--requests`, a trace's end).
    Requests,
    /// `--duration` ended sending.
    Duration,
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// A closed loop's every request failed for a while (a failure storm:
    /// the last 1,000 failed and none succeeded for 10 s, or 50,000 failed
    /// in a row); `detail` says so and names the first failure.
    FailureStorm,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::UntilMet => "until_met",
            StopReason::SloDecided => "slo_decided",
            StopReason::Cap => "cap",
            StopReason::Requests => "requests",
            StopReason::Duration => "duration",
            StopReason::Interrupted => "interrupted",
            StopReason::FailureStorm => "failure_storm",
        }
    }
}

/// `stop` of the result: why the run stopped sending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Stop {
    pub reason: StopReason,
    /// In words: the figures that decided, with their intervals and what
    /// was asked of them; empty when the reason says it all.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    /// Measured requests completed when a stopping rule decided (or, at a
    /// cap, all the run completed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_requests: Option<u64>,
    /// How many times the stopping rule looked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub looks: Option<u32>,
}

/// `config.stopping` of the result: the stopping rules a run was given.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct StoppingConfig {
    /// The `--until` terms as goodput read them (`ttft:p99±5%`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// `--stop-on-slo`.
    #[serde(default)]
    pub stop_on_slo: bool,
}

/// One SLO term judged by `judge` (its side, if wholly on one, and its
/// words) at the confidences `(met, missed)` ([`Watch::term_confidences`]):
/// met where its interval at `met` says so, missed where its interval at
/// `missed` does, else undecided; the words of the side decided, an
/// undecided term's at `missed` (the wider).
fn two_sided((met, missed): (f64, f64), judge: impl Fn(f64) -> (Option<bool>, String)) -> (Option<bool>, String) {
    let at_met = judge(met);
    if at_met.0 == Some(true) {
        return at_met;
    }
    let (side, words) = if missed == met { at_met } else { judge(missed) };
    (side.filter(|met| !met), words)
}

/// The confidence of `--stop-on-slo`'s k-th look (from 1) when the run's
/// intervals are at `conf`: the error rate 1 − conf spent over the looks,
/// α/(k(k+1)) at the k-th, so that the chance any look calls the wrong side
/// of a limit is at most α however many looks the run takes (the sum of
/// α/(k(k+1)) over every k is α).
pub fn decision_confidence(conf: f64, look: u32) -> f64 {
    let k = f64::from(look.max(1));
    1.0 - (1.0 - conf) / (k * (k + 1.0))
}

/// The stopping rules of one run, fed its records as they complete.
#[derive(Debug, Clone)]
pub struct Watch {
    until: Vec<Target>,
    slo: Option<Slo>,
    confidence: f64,
    /// Per latency metric the rules need, its successful measured samples
    /// (ms): for an `--until` figure every one, as the run's figures take
    /// them, and for an objective (`true`) those the verdict takes, none of
    /// a TPOT or ITL term output that came all at once left unmeasured
    /// ([`SloMetric::unmeasured`]).
    samples: Vec<((SloMetric, bool), Vec<f64>)>,
    /// The earliest measured send and the latest end, and each measured
    /// record's end with its output tokens (rates).
    first_sent: Option<Duration>,
    last_end: Duration,
    ends: Vec<(Duration, bool, u64)>,
    /// What the verdict's attainment counts, in the order they completed
    /// (the dependence between neighbours): each judged request (not
    /// cancelled), whether it attained it, and each cancelled one that had
    /// certainly missed ([`Slo::attainment_counts_cancelled`]), a miss.
    attains: Vec<bool>,
    /// Judged requests that failed: samples of every SLO objective above
    /// its limit, as the verdict counts them.
    failed: u64,
    /// Per run-level quality objective (the SLO's order), the scores the
    /// verdict averages: each successful measured request's that carries
    /// one, with its id (the verdict sums them in id order, and so does
    /// the watch, to the bit); empty for a corpus score, which no request
    /// has.
    scores: Vec<Vec<(u64, f64)>>,
    /// Per per-request quality limit (the SLO's order), whether a judged
    /// request was scored by it: until one is, the verdict counts no
    /// request good.
    limit_scored: Vec<bool>,
    measured: u64,
    next_look: u64,
    looks: u32,
    /// Measured requests sent together at the run's start (a closed loop's
    /// users without a ramp-up, less the warm-up): see [`Watch::with_start_wave`].
    start_wave: u64,
}

/// A latency percentile's interval and estimate over `samples`, in the
/// order they completed: widened where neighbours depend on each other, as
/// the summary's is ([`percentile_interval_dependent`]).
fn percentile_figure(samples: &[f64], p: f64, conf: f64) -> (Option<f64>, Interval) {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    (percentile(&s, p), percentile_interval_dependent(samples, &s, p, conf).0)
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "none".to_string(),
        Some(v) if v.is_infinite() => "∞".to_string(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
    }
}

fn fmt_interval(i: &Interval) -> String {
    format!("[{}, {}]", fmt_value(i.lo), fmt_value(i.hi))
}

impl Watch {
    /// The rules of `until` and, when `stop_on_slo`, of `slo`'s objectives
    /// and limits, with intervals at `confidence`. `None` when there is
    /// nothing to watch.
    pub fn new(until: Option<&Until>, slo: Option<&Slo>, confidence: f64) -> Option<Watch> {
        let until: Vec<Target> = until.map(|u| u.targets.clone()).unwrap_or_default();
        let slo = slo.filter(|s| slo_decidable(s)).cloned();
        if until.is_empty() && slo.is_none() {
            return None;
        }
        let metrics: Vec<(SloMetric, bool)> = until
            .iter()
            .filter_map(|t| match t.figure {
                Figure::Percentile { metric, .. } => Some((metric, false)),
                _ => None,
            })
            .chain(slo.iter().flat_map(|s| s.objectives.iter().map(|o| (o.metric, true))))
            // The limits' latencies, for the attainment where too few
            // requests missed to tell how they cluster ([`wilson_dependent`]).
            .chain(slo.iter().flat_map(|s| s.limits.iter().map(|l| (l.metric, false))))
            .collect();
        let mut samples: Vec<((SloMetric, bool), Vec<f64>)> = Vec::new();
        for m in metrics {
            if !samples.iter().any(|(k, _)| *k == m) {
                samples.push((m, Vec::new()));
            }
        }
        let scores = slo.iter().flat_map(|s| s.quality_objectives.iter().map(|_| Vec::new())).collect();
        let limit_scored = slo.iter().flat_map(|s| s.quality_limits.iter().map(|_| false)).collect();
        Some(Watch {
            until,
            slo,
            confidence,
            samples,
            scores,
            limit_scored,
            first_sent: None,
            last_end: Duration::ZERO,
            ends: Vec::new(),
            attains: Vec::new(),
            failed: 0,
            measured: 0,
            next_look: FIRST_LOOK,
            looks: 0,
            start_wave: 0,
        })
    }

    /// The rules of a run whose first `n` measured requests are sent
    /// together (a closed loop's users, started at once): they are
    /// prefilled as one wave, and their like latencies, far from the rest,
    /// are tied at the top of the first samples. A percentile past the
    /// median is taken among them, and its interval's bounds, tied too,
    /// are as narrow as a point: `--until ttft:p90±3%` had stopped 16 users
    /// after 50 requests at a p90 of 136 ms "±0.2%", where the run's p90 was
    /// 35 ms. So a percentile `p` is not judged (neither an `--until` width
    /// nor an objective's side) until the wave is at most half of the
    /// samples above it: `2n / (1 − p/100)` requests completed.
    pub fn with_start_wave(mut self, n: u64) -> Watch {
        self.start_wave = n;
        self
    }

    /// The requests that must have completed before percentile `p` is
    /// judged ([`Watch::with_start_wave`]); `None` when there is no wave.
    fn wave_needs(&self, p: f64) -> Option<u64> {
        (self.start_wave > 1).then(|| {
            // In per cent, and rid of rounding's last bit: 2 × 16 / 0.1 is 320.
            let tail = (100.0 - p).max(0.01);
            (2.0 * self.start_wave as f64 * 100.0 / tail - 1e-9).ceil() as u64
        })
    }

    /// Why percentile `p` is not judged yet, where the start's wave could
    /// still decide it.
    fn wave_holds(&self, p: f64) -> Option<String> {
        let needs = self.wave_needs(p).filter(|&n| self.measured < n)?;
        Some(format!(
            "the {} requests sent together at the start could decide a p{p} until {needs} have completed",
            self.start_wave
        ))
    }

    /// Measured requests completed so far.
    pub fn measured(&self) -> u64 {
        self.measured
    }

    pub fn looks(&self) -> u32 {
        self.looks
    }

    /// Takes one completed record; at a look, the decision to stop, if the
    /// rules decided.
    pub fn observe(&mut self, r: &RequestRecord) -> Option<Stop> {
        if !self.absorb(r) {
            return None;
        }
        if self.measured < self.next_look {
            return None;
        }
        self.next_look = ((self.measured as f64 * LOOK_GROWTH).ceil() as u64).max(self.measured + 1);
        self.looks += 1;
        self.decide()
    }

    /// Takes one completed record without looking: one that finished after
    /// the rules decided (in flight at the decision), for [`Watch::settled`].
    /// Whether it was measured.
    pub fn absorb(&mut self, r: &RequestRecord) -> bool {
        if r.warmup {
            return false;
        }
        self.measured += 1;
        self.first_sent = Some(self.first_sent.map_or(r.sent, |s| s.min(r.sent)));
        self.last_end = self.last_end.max(r.end);
        let rates = self.until.iter().any(|t| !matches!(t.figure, Figure::Percentile { .. }));
        if rates {
            self.ends.push((r.end, r.outcome.is_success(), r.output_tokens));
        }
        if matches!(r.outcome, Outcome::Cancelled) {
            // A miss the verdict counts: an overloaded run's requests
            // cancelled past the TTFT limit had been left out, and the run
            // stopped as met where the verdict missed.
            if let Some(slo) = &self.slo {
                if slo.attainment_counts_cancelled(r) {
                    self.attains.push(false);
                }
            }
        } else {
            if let Some(slo) = &self.slo {
                // What the verdict's attainment counts.
                self.attains.push(slo.attains(r));
                self.failed += u64::from(!r.outcome.is_success());
                // The scores, as the verdict takes them: a quality limit is
                // scored by any judged request, a run-level figure
                // averages the successful ones.
                if let Some(q) = &r.quality {
                    for (l, scored) in slo.quality_limits.iter().zip(&mut self.limit_scored) {
                        *scored |= q.get(l.metric.as_str()).is_some();
                    }
                    if r.outcome.is_success() {
                        for (o, v) in slo.quality_objectives.iter().zip(&mut self.scores) {
                            if let Some(x) = q.get(o.metric.as_str()) {
                                v.push((r.id, x));
                            }
                        }
                    }
                }
            }
            if r.outcome.is_success() {
                for ((m, objective), v) in &mut self.samples {
                    // An objective takes no sample of a term the answer did
                    // not let be measured, as the verdict takes none: a
                    // buffered stream's TPOTs of 0 had decided
                    // `tpot:p90<=50ms` met where the verdict, with no
                    // sample, fails it.
                    if *objective && m.unmeasured(r) {
                        continue;
                    }
                    if let Some(d) = m.of(r) {
                        v.push(ms(d));
                    }
                }
            }
        }
        true
    }

    /// `m`'s samples for an `--until` figure, or with `objective` for an
    /// SLO objective.
    fn samples_of(&self, m: SloMetric, objective: bool) -> &[f64] {
        self.samples.iter().find(|(k, _)| *k == (m, objective)).map_or(&[], |(_, v)| v.as_slice())
    }

    /// A figure's estimate and interval on what has completed so far.
    fn figure(&self, f: Figure, conf: f64) -> (Option<f64>, Interval) {
        match f {
            Figure::Percentile { metric, p } => percentile_figure(self.samples_of(metric, false), p, conf),
            Figure::RequestsPerS | Figure::OutputTokensPerS => {
                let Some(t0) = self.first_sent else { return (None, Interval::NONE) };
                let dur = (self.last_end.saturating_sub(t0)).as_secs_f64();
                let events: Vec<(f64, f64)> = self
                    .ends
                    .iter()
                    .filter_map(|&(end, ok, tokens)| {
                        let t = end.saturating_sub(t0).as_secs_f64();
                        match f {
                            Figure::RequestsPerS => ok.then_some((t, 1.0)),
                            _ => Some((t, tokens as f64)),
                        }
                    })
                    .collect();
                let total: f64 = events.iter().map(|e| e.1).sum();
                let est = (dur > 0.0).then(|| total / dur);
                (est, rate_interval(&events, dur, BATCHES, conf))
            }
        }
    }

    /// Each `--until` target: whether met, and in words, those not met
    /// ending in `unmet` (", not yet").
    fn until_status(&self, unmet: &str) -> Vec<(bool, String)> {
        self.until
            .iter()
            .map(|t| {
                let (est, i) = self.figure(t.figure, self.confidence);
                let half = match (est, i.lo, i.hi) {
                    (Some(e), Some(lo), Some(hi)) => Some((e - lo).max(hi - e)),
                    _ => None,
                };
                let allowed = match (t.width, est) {
                    (Width::Relative(s), Some(e)) => Some(s * e.abs()),
                    (Width::Absolute(a), _) => Some(a),
                    _ => None,
                };
                let wave = match t.figure {
                    Figure::Percentile { p, .. } => self.wave_holds(p),
                    _ => None,
                };
                let met = matches!((half, allowed), (Some(h), Some(a)) if h <= a) && wave.is_none();
                let off = match (half, est) {
                    (Some(h), Some(e)) if matches!(t.width, Width::Relative(_)) && e != 0.0 => {
                        // Enough decimals that a width not yet met does not
                        // read as the target or below (±0.0% for ±0.01%).
                        let pct = h / e.abs() * 100.0;
                        let target = match t.width {
                            Width::Relative(s) => s * 100.0,
                            Width::Absolute(_) => 0.0,
                        };
                        let mut d = 1;
                        while d < 6 && !met && format!("{pct:.d$}").parse::<f64>().unwrap_or(pct) <= target {
                            d += 1;
                        }
                        format!("±{pct:.d$}%")
                    }
                    (Some(h), _) => format!("±{}", fmt_value(Some(h))),
                    _ => "unbounded".to_string(),
                };
                (
                    met,
                    format!(
                        "{t}: {} {} {} ({off}{}{})",
                        fmt_value(est),
                        t.figure.unit(),
                        fmt_interval(&i),
                        if met { "" } else { unmet },
                        wave.map(|w| format!(": {w}")).unwrap_or_default()
                    ),
                )
            })
            .collect()
    }

    /// The confidences `slo`'s terms are judged at, at this look: `(met,
    /// missed)`. The SLO is met when every term is (an intersection–union
    /// test, Berger 1982): were one term truly missed, calling the SLO met
    /// needs that term called met, whose chance is at most the look's error
    /// rate ([`decision_confidence`]), so each term's met side is judged at
    /// the look's whole rate. The SLO is missed when any term is: that
    /// chance adds up over the terms, so the missed side is judged at the
    /// look's rate split evenly over the terms (percentile objectives,
    /// quality means, the attainment). Either way the chance that any look
    /// calls the SLO's wrong side is at most α. (Split on both sides, as
    /// it had been, an SLO of several terms took longer to be called met
    /// than its guarantee needs; judged at the whole rate on both, an SLO
    /// of m terms could be called missed wrongly up to m times as often.
    /// Holm's step-down would change nothing here: one term decided missed
    /// decides the SLO, and Holm's first step is this split.)
    fn term_confidences(&self, slo: &Slo) -> (f64, f64) {
        let terms = slo.objectives.len() + slo.quality_objectives.len() + usize::from(slo.judges_attainment());
        let look = decision_confidence(self.confidence, self.looks);
        (look, 1.0 - (1.0 - look) / terms.max(1) as f64)
    }

    /// The SLO's verdict at this look: `Some(true)` when every objective
    /// (percentile and quality, and the attainment) is decided met,
    /// `Some(false)` when one is decided missed; with the words for each,
    /// at the confidence of the side it was decided on (an undecided
    /// term's at the missed side's, the wider).
    fn slo_status(&self) -> (Option<bool>, Vec<String>) {
        let Some(slo) = &self.slo else { return (None, Vec::new()) };
        let (sides, words): (Vec<Option<bool>>, Vec<String>) =
            self.slo_terms(slo, self.term_confidences(slo)).into_iter().unzip();
        let verdict = if sides.contains(&Some(false)) {
            Some(false)
        } else if sides.iter().all(|s| *s == Some(true)) {
            Some(true)
        } else {
            None
        };
        (verdict, words)
    }

    /// Each of `slo`'s terms judged at the confidences `(met, missed)`
    /// ([`Watch::term_confidences`]): the side its interval lies on, if
    /// wholly, and its words ([`two_sided`]). What a term's interval is
    /// drawn from (its samples sorted, its scores' mean) is made once.
    fn slo_terms(&self, slo: &Slo, confs: (f64, f64)) -> Vec<(Option<bool>, String)> {
        let mut terms = Vec::new();
        for o in &slo.objectives {
            // Each failure a sample above the limit, as the verdict takes it:
            // a bound among the failures is infinite (where a figure's
            // interval would call that side unbounded), which no limit meets.
            // The bounds hold the estimate the verdict judges, so a side
            // decided is the verdict's.
            // The dependence between neighbours is read on the successes in
            // the order they completed (a failure's place is not kept).
            let failures = (0..self.failed).map(|_| f64::INFINITY);
            let in_order = self.samples_of(o.metric, true);
            let mut samples: Vec<f64> = in_order.iter().copied().chain(failures).collect();
            samples.sort_by(f64::total_cmp);
            let limit = ms(o.max);
            let wave = self.wave_holds(o.percentile);
            let why = wave.as_ref().map(|w| format!(" ({w})")).unwrap_or_default();
            terms.push(two_sided(confs, |conf| {
                let i = percentile_objective_bounds_dependent(in_order, &samples, o.percentile, conf);
                let side = match (i.lo, i.hi) {
                    _ if wave.is_some() => None,
                    (_, Some(hi)) if hi <= limit => Some(true),
                    (Some(lo), _) if lo > limit => Some(false),
                    _ => None,
                };
                (side, format!("{o}: {} ms {}{why}", fmt_interval(&i), side_words(side)))
            }));
        }
        for (o, v) in slo.quality_objectives.iter().zip(&self.scores) {
            // Judged as the verdict judges it (the watch had left these
            // out, and stopped as met a run whose `exact>=0.9` the verdict
            // failed at 0.8): a mean score by its interval, Wilson's over
            // its share of the full score (a score in [0, 1] varies no
            // more than a proportion does), moved to hold the mean the
            // verdict judges. A corpus score has none, and never lets the
            // SLO be decided met.
            let (side, said) = match o.metric.full_score() {
                None => (None, "a corpus score of the whole run, not judged before its end".to_string()),
                Some(_) if v.is_empty() => (None, "no request scored yet".to_string()),
                Some(full) => {
                    let mut v = v.clone();
                    v.sort_by_key(|s| s.0);
                    let mean = v.iter().map(|s| s.1).sum::<f64>() / v.len() as f64;
                    two_sided(confs, |conf| {
                        let share = wilson_share((mean / full).clamp(0.0, 1.0), v.len() as u64, conf);
                        let i = Interval { lo: share.lo.map(|l| l * full), hi: share.hi.map(|h| h * full) }
                            .holding(Some(mean));
                        let side = match (i.lo, i.hi) {
                            (Some(lo), _) if lo >= o.min => Some(true),
                            (_, Some(hi)) if hi < o.min => Some(false),
                            _ => None,
                        };
                        (side, format!("{} {} {}", fmt_value(Some(mean)), fmt_interval(&i), side_words(side)))
                    })
                }
            };
            terms.push((side, format!("{o}: {said}")));
        }
        if slo.judges_attainment() {
            let target = slo.attainment_target();
            // The latencies the terms judge, as the summary's attainment reads them.
            let alike: Vec<&[f64]> = slo
                .limits
                .iter()
                .map(|l| self.samples_of(l.metric, false))
                .chain(slo.objectives.iter().map(|o| self.samples_of(o.metric, true)))
                .collect();
            // A quality limit no judged request was scored by leaves the
            // verdict no request good: not met until one is (a run whose
            // answers had no score had stopped as met, at 100%, where the
            // verdict fails it).
            let unscored: Vec<String> = slo
                .quality_limits
                .iter()
                .zip(&self.limit_scored)
                .filter(|(_, scored)| !**scored)
                .map(|(l, _)| l.to_string())
                .collect();
            let why = match unscored.is_empty() {
                true => String::new(),
                false => format!(
                    " ({} scored no request yet, and the verdict counts none good until one is)",
                    unscored.join(", ")
                ),
            };
            terms.push(two_sided(confs, |conf| {
                // Widened where neighbours depend on each other, as the
                // summary's attainment interval is.
                let i = wilson_dependent(&self.attains, &alike, conf).0;
                let side = match (i.lo, i.hi) {
                    (Some(lo), _) if lo >= target => Some(true),
                    (_, Some(hi)) if hi < target => Some(false),
                    _ => None,
                };
                let side = side.filter(|met| !met || unscored.is_empty());
                (side, format!("attainment>={target}: {} {}{why}", fmt_interval(&i), side_words(side)))
            }));
        }
        terms
    }

    /// The decision at this look, if any.
    fn decide(&self) -> Option<Stop> {
        let stop = |reason, detail| Stop { reason, detail, at_requests: Some(self.measured), looks: Some(self.looks) };
        if !self.until.is_empty() {
            let status = self.until_status(", not yet");
            if status.iter().all(|s| s.0) {
                let words: Vec<String> = status.into_iter().map(|s| s.1).collect();
                return Some(stop(
                    StopReason::UntilMet,
                    format!("at {:.0}% confidence: {}", self.confidence * 100.0, words.join("; ")),
                ));
            }
        }
        if let (Some(verdict), words) = self.slo_status() {
            let (met, missed) =
                self.slo.as_ref().map_or((self.confidence, self.confidence), |slo| self.term_confidences(slo));
            let at = match verdict {
                true if met != missed => format!("each term at {:.4}% confidence", met * 100.0),
                false if met != missed => {
                    format!("at {:.4}% confidence, the look's error rate split over its terms", missed * 100.0)
                }
                _ => format!("at {:.4}% confidence", met * 100.0),
            };
            return Some(stop(
                StopReason::SloDecided,
                format!(
                    "the SLO is {} (look {}, {at}): {}",
                    if verdict { "met" } else { "missed" },
                    self.looks,
                    words.join("; ")
                ),
            ));
        }
        None
    }

    /// `stop`, the decision these rules took, once the requests in flight
    /// at it have finished too (each taken by [`Watch::absorb`]): the
    /// result's intervals are over every request, so where one of them
    /// took an `--until` figure's interval outside its half-width again,
    /// `detail` says so, with the figure over them all. Any other stop, or
    /// one that still holds, is returned as it was.
    pub fn settled(&self, mut stop: Stop) -> Stop {
        let Some(at) = stop.at_requests else { return stop };
        if stop.reason != StopReason::UntilMet || self.measured <= at {
            return stop;
        }
        let missed: Vec<String> =
            self.until_status(", no longer within").into_iter().filter(|s| !s.0).map(|s| s.1).collect();
        if !missed.is_empty() {
            let after = self.measured - at;
            stop.detail.push_str(&format!(
                "; then the {after} request{} in flight at the decision finished, and over all {}: {}",
                if after == 1 { "" } else { "s" },
                self.measured,
                missed.join("; ")
            ));
        }
        stop
    }

    /// Why the run stopped when it reached its limit with the rules
    /// undecided: the figures over every record taken.
    pub fn capped(&self, limit: &str) -> Stop {
        let mut words: Vec<String> = self.until_status(", not yet").into_iter().filter(|s| !s.0).map(|s| s.1).collect();
        let (_, slo) = self.slo_status();
        if !slo.is_empty() {
            words.push(format!("the SLO undecided: {}", slo.join("; ")));
        }
        Stop {
            reason: StopReason::Cap,
            detail: match words.is_empty() {
                // The rules held only after the last look.
                true => format!("{limit} came first"),
                false => format!("{limit} came first: {}", words.join("; ")),
            },
            at_requests: Some(self.measured),
            looks: Some(self.looks),
        }
    }
}

/// Whether `--stop-on-slo` can decide anything of `slo` as the run goes: a
/// percentile objective, the attainment of per-request limits, or a
/// run-level mean score (`exact>=0.8`). An SLO of corpus scores alone
/// (`bleu>=20`) it cannot.
pub fn slo_decidable(slo: &Slo) -> bool {
    !slo.objectives.is_empty()
        || slo.judges_attainment()
        || slo.quality_objectives.iter().any(|o| !o.metric.is_corpus())
}

/// The terms of `slo` that `--stop-on-slo` cannot judge before the run's
/// end, as written: corpus scores (`bleu>=20`, `chrf_corpus>=50`), figures
/// of the whole run's pooled statistics. With one, the rule never decides
/// the SLO met (it may still decide it missed on another term).
pub fn slo_undecidable_terms(slo: &Slo) -> Vec<String> {
    slo.quality_objectives.iter().filter(|o| o.metric.is_corpus()).map(|o| o.to_string()).collect()
}

fn side_words(side: Option<bool>) -> &'static str {
    match side {
        Some(true) => "wholly within",
        Some(false) => "wholly beyond",
        None => "on both sides",
    }
}

#[cfg(test)]
mod tests;
