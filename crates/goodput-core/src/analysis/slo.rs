//! Service-level objectives and goodput (docs/metrics.md): per-request limits that
//! make a request "good", percentile objectives judged on the run, and the
//! goodput figures that follow from them.

use crate::analysis::metrics::{ms, RequestMetrics};
use crate::analysis::stats::{percentile_key, Distribution};
use crate::doc::record::{Outcome, RequestRecord};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A per-request metric an SLO can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SloMetric {
    Ttft,
    Tpot,
    E2e,
    ItlMax,
    Ttfb,
}

impl SloMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            SloMetric::Ttft => "ttft",
            SloMetric::Tpot => "tpot",
            SloMetric::E2e => "e2e",
            SloMetric::ItlMax => "itl_max",
            SloMetric::Ttfb => "ttfb",
        }
    }

    /// Whether `r` defines this metric but did not let it be measured: a
    /// TPOT or ITL term of an answer of two tokens or more that came all at
    /// once ([`unstreamed`]). Such a request does not meet the term: its
    /// TPOT had been undefined or 0, and the SLO had passed with nothing
    /// measured.
    pub fn unmeasured(self, r: &RequestRecord) -> bool {
        matches!(self, SloMetric::Tpot | SloMetric::ItlMax) && unstreamed(r)
    }

    /// The metric of one request; `None` where the request cannot define it
    /// (a one-token answer has no TPOT), which no limit can violate (but see
    /// [`SloMetric::unmeasured`]).
    pub fn of(self, r: &RequestRecord) -> Option<Duration> {
        match self {
            SloMetric::Ttft => r.ttft(),
            SloMetric::Tpot => r.tpot(),
            SloMetric::E2e => r.e2e(),
            SloMetric::ItlMax => r.itl_max(),
            SloMetric::Ttfb => r.ttfb(),
        }
    }
}

/// Whether `r`'s output, two tokens or more, came all at once: in one
/// chunk, or every chunk in one read or at one instant (a server that
/// answered one JSON body where a stream was asked, a proxy that buffered
/// the stream). Its TTFT is then the whole response's time, and its TPOT
/// and ITL measure nothing. A one-token answer is none of this.
pub fn unstreamed(r: &RequestRecord) -> bool {
    let (Some(first), Some(last)) = (r.chunks.first(), r.chunks.last()) else { return false };
    let n = r.chunks.len();
    r.output_tokens >= 2 && (n < 2 || r.shared_reads as usize + 1 >= n || first.t == last.t)
}

/// An `--slo` (or a config's `slo`) that does not read; each message names
/// the term at fault and shows how to write it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SloError {
    #[error(
        "unknown SLO metric '{0}'{lower}: use ttft, tpot, e2e, itl_max or ttfb for times (e.g. ttft<=200ms), or \
         exact, number, rouge_l, chrf, bleu or chrf_corpus for quality scores (e.g. exact>=0.8)",
        lower = lower_hint(.0)
    )]
    UnknownMetric(String),
    #[error(
        "SLO term '{term}': {metric} is a quality score, bounded from below: write {metric}>={value} (<= is for \
         times, e.g. ttft<=200ms)"
    )]
    QualityAtMost { term: String, metric: String, value: String },
    #[error("unknown quality metric '{0}': use exact, number, rouge_l, chrf, bleu or chrf_corpus")]
    UnknownQualityMetric(String),
    #[error("'{0}' needs a unit an SLO takes (us, ms or s): write e.g. 200ms or 1.5s (1h is 3600s)")]
    NoUnit(String),
    #[error("'{0}' is not a duration: write e.g. 200ms or 1.5s")]
    NotADuration(String),
    #[error("'{0}' must be a positive duration")]
    NotPositive(String),
    #[error("'{0}' is longer than any run (100 years): write e.g. 200ms or 1.5s")]
    TooLong(String),
    #[error("SLO term '{term}' needs '<=': write e.g. ttft<=200ms or ttft:p95<=200ms")]
    NeedsAtMost { term: String },
    #[error("SLO term '{term}': '{percentile}' is not a percentile like p95")]
    NotAPercentile { term: String, percentile: String },
    #[error("SLO term '{term}': {metric} is a time, bounded from above: write {metric}<={value} (>= is for quality scores, e.g. exact>=0.8)")]
    LatencyAtLeast { term: String, metric: String, value: String },
    #[error("SLO term '{term}': '{value}' is not a number (e.g. exact>=0.8)")]
    NotANumber { term: String, value: String },
    #[error("SLO term '{term}': '{found}' is not 'mean' (write e.g. rouge_l:mean>=0.5)")]
    NotMean { term: String, found: String },
    /// A term whose limit or metric did not read, with the reason.
    #[error("SLO term '{term}': {reason}")]
    Term { term: String, reason: Box<SloError> },
    #[error("the SLO is empty: write e.g. ttft<=200ms,tpot<=50ms")]
    Empty,
    #[error(
        "SLO term '{term}': the attainment target is a share of requests above 0 and at most 1 (e.g. \
         attainment>=0.95, or attainment>=95%)"
    )]
    NotAShare { term: String },
    #[error("the SLO gives its attainment target twice ('{first}' and '{second}'): keep one")]
    AttainmentTwice { first: String, second: String },
    /// One limit, or one percentile objective, given twice: only the
    /// tighter could bind, and which was meant is unclear.
    #[error("the SLO bounds {what} twice ('{first}' and '{second}'): keep the one you mean")]
    TermTwice { what: String, first: String, second: String },
    #[error(
        "the SLO 'attainment>={0}' has no limit to attain: add one (e.g. ttft<=200ms,attainment>={0}) or \
         write a percentile objective (ttft:p95<=200ms)"
    )]
    AttainmentAlone(f64),
}

/// For a metric written in capitals (`TTFT`) that is one in lower case.
fn lower_hint(name: &str) -> String {
    let lower = name.to_ascii_lowercase();
    let known = lower != name && (lower.parse::<SloMetric>().is_ok() || lower.parse::<QualityMetric>().is_ok());
    if known {
        format!(" (metric names are lower case: {lower})")
    } else {
        String::new()
    }
}

impl SloError {
    fn in_term(self, term: &str) -> SloError {
        SloError::Term { term: term.to_string(), reason: Box::new(self) }
    }
}

impl FromStr for SloMetric {
    type Err = SloError;
    fn from_str(s: &str) -> Result<Self, SloError> {
        match s.trim() {
            "ttft" => Ok(SloMetric::Ttft),
            "tpot" => Ok(SloMetric::Tpot),
            "e2e" => Ok(SloMetric::E2e),
            "itl_max" => Ok(SloMetric::ItlMax),
            "ttfb" => Ok(SloMetric::Ttfb),
            other => Err(SloError::UnknownMetric(other.to_string())),
        }
    }
}

/// `metric<=limit` for every request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    pub metric: SloMetric,
    pub max: Duration,
}

/// `metric:pNN<=limit` over the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objective {
    pub metric: SloMetric,
    pub percentile: f64,
    pub max: Duration,
}

/// A quality figure an SLO can bound from below (docs/metrics.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QualityMetric {
    Exact,
    Number,
    RougeL,
    Chrf,
    /// Corpus BLEU, of the run only.
    Bleu,
    /// Corpus chrF, of the run only.
    ChrfCorpus,
}

impl QualityMetric {
    pub fn as_str(self) -> &'static str {
        match self {
            QualityMetric::Exact => "exact",
            QualityMetric::Number => "number",
            QualityMetric::RougeL => "rouge_l",
            QualityMetric::Chrf => "chrf",
            QualityMetric::Bleu => "bleu",
            QualityMetric::ChrfCorpus => "chrf_corpus",
        }
    }

    /// The scorer that gives it.
    pub fn scorer(self) -> crate::quality::Scorer {
        use crate::quality::Scorer;
        match self {
            QualityMetric::Exact => Scorer::Exact,
            QualityMetric::Number => Scorer::Number,
            QualityMetric::RougeL => Scorer::RougeL,
            QualityMetric::Chrf | QualityMetric::ChrfCorpus => Scorer::Chrf,
            QualityMetric::Bleu => Scorer::Bleu,
        }
    }

    /// A bare `name>=x` bounds each request for the graded scores (ROUGE-L,
    /// sentence chrF) and the run for the others: an exact match is 0 or 1
    /// per request, and corpus scores exist only over the run.
    fn per_request_by_default(self) -> bool {
        matches!(self, QualityMetric::RougeL | QualityMetric::Chrf)
    }

    /// A corpus score (BLEU, corpus chrF): a figure of the whole run's
    /// pooled statistics, not a mean of per-request scores, so no interval
    /// bounds it before the run ends.
    pub fn is_corpus(self) -> bool {
        matches!(self, QualityMetric::Bleu | QualityMetric::ChrfCorpus)
    }

    /// The most a request's score can be: 100 for sentence chrF, 1 for the
    /// others (a share of 0–1); `None` for a corpus score, which no request has.
    pub fn full_score(self) -> Option<f64> {
        match self {
            QualityMetric::Exact | QualityMetric::Number | QualityMetric::RougeL => Some(1.0),
            QualityMetric::Chrf => Some(100.0),
            QualityMetric::Bleu | QualityMetric::ChrfCorpus => None,
        }
    }

    /// The run's figure: a score's mean, or a corpus score.
    pub fn of_run(self, q: &crate::quality::QualityScores) -> Option<f64> {
        match self {
            QualityMetric::Exact => q.exact.as_ref().map(|m| m.mean),
            QualityMetric::Number => q.number.as_ref().map(|m| m.mean),
            QualityMetric::RougeL => q.rouge_l.as_ref().map(|m| m.mean),
            QualityMetric::Chrf => q.chrf.as_ref().map(|m| m.mean),
            QualityMetric::Bleu => q.bleu,
            QualityMetric::ChrfCorpus => q.chrf_corpus,
        }
    }
}

impl FromStr for QualityMetric {
    type Err = SloError;
    fn from_str(s: &str) -> Result<Self, SloError> {
        match s.trim() {
            "exact" => Ok(QualityMetric::Exact),
            "number" => Ok(QualityMetric::Number),
            "rouge_l" | "rouge-l" => Ok(QualityMetric::RougeL),
            "chrf" => Ok(QualityMetric::Chrf),
            "bleu" => Ok(QualityMetric::Bleu),
            "chrf_corpus" => Ok(QualityMetric::ChrfCorpus),
            other => Err(SloError::UnknownQualityMetric(other.to_string())),
        }
    }
}

/// `rouge_l>=0.3`: every scored request must reach it to be good.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityLimit {
    pub metric: QualityMetric,
    pub min: f64,
}

/// `exact>=0.8` (or `rouge_l:mean>=0.5`): the run's figure must reach it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QualityObjective {
    pub metric: QualityMetric,
    pub min: f64,
}

impl fmt::Display for QualityLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}>={}", self.metric.as_str(), self.min)
    }
}

impl fmt::Display for QualityObjective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.metric.per_request_by_default() {
            write!(f, "{}:mean>={}", self.metric.as_str(), self.min)
        } else {
            write!(f, "{}>={}", self.metric.as_str(), self.min)
        }
    }
}

/// The share of judged requests that must be good for per-request limits
/// to pass, unless the SLO (`attainment>=0.95`) or `--attainment` says
/// otherwise: a limit alone says what a good request is, not how many must
/// be.
pub const DEFAULT_ATTAINMENT: f64 = 0.9;

/// A set of per-request limits and percentile objectives, on latency and
/// on answer quality.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Slo {
    pub limits: Vec<Limit>,
    pub objectives: Vec<Objective>,
    pub quality_limits: Vec<QualityLimit>,
    pub quality_objectives: Vec<QualityObjective>,
    /// `attainment>=0.95`: the share of judged requests that must be good;
    /// [`DEFAULT_ATTAINMENT`] where not given.
    pub attainment: Option<f64>,
}

/// One `name>=x` or `name:mean>=x` term.
fn parse_quality_term(slo: &mut Slo, part: &str) -> Result<(), SloError> {
    let (lhs, rhs) = part.split_once(">=").expect("a quality term has >=");
    let latency = lhs.split_once(':').map_or(lhs, |(m, _)| m).trim();
    if latency.parse::<SloMetric>().is_ok() {
        return Err(SloError::LatencyAtLeast {
            term: part.to_string(),
            metric: lhs.trim().to_string(),
            value: rhs.trim().to_string(),
        });
    }
    let min: f64 = rhs
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| SloError::NotANumber { term: part.to_string(), value: rhs.trim().to_string() })?;
    let (name, mean) = match lhs.split_once(':') {
        None => (lhs, false),
        Some((n, "mean")) => (n, true),
        Some((_, other)) => return Err(SloError::NotMean { term: part.to_string(), found: other.to_string() }),
    };
    let metric: QualityMetric = name.parse().map_err(|e: SloError| e.in_term(part))?;
    if !mean && metric.per_request_by_default() {
        slo.quality_limits.push(QualityLimit { metric, min });
    } else {
        slo.quality_objectives.push(QualityObjective { metric, min });
    }
    Ok(())
}

/// A limit as `--slo` takes it, from its whole nanoseconds (a float's
/// milliseconds had printed 150.1ms as 150.10000000000002ms).
fn fmt_ms(d: Duration) -> String {
    let ns = d.as_nanos();
    if ns >= 1_000_000_000 && ns.is_multiple_of(1_000_000_000) {
        return format!("{}s", ns / 1_000_000_000);
    }
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        format!("{whole}ms")
    } else {
        format!("{whole}.{}ms", format!("{frac:06}").trim_end_matches('0'))
    }
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}<={}", self.metric.as_str(), fmt_ms(self.max))
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:p{}<={}", self.metric.as_str(), self.percentile, fmt_ms(self.max))
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .limits
            .iter()
            .map(|l| l.to_string())
            .chain(self.objectives.iter().map(|o| o.to_string()))
            .chain(self.quality_limits.iter().map(|l| l.to_string()))
            .chain(self.quality_objectives.iter().map(|o| o.to_string()))
            .chain(self.attainment.map(|a| format!("attainment>={a}")))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// A duration with its unit: `200ms`, `1.5s`, `250us`.
pub(crate) fn parse_limit(s: &str) -> Result<Duration, SloError> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else {
        return Err(SloError::NoUnit(s.to_string()));
    };
    let v: f64 = num.trim().parse().map_err(|_| SloError::NotADuration(s.to_string()))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(SloError::NotPositive(s.to_string()));
    }
    match Duration::try_from_secs_f64(v * scale) {
        // Under a nanosecond rounds to none (1e-300ms): no time, as 0 is.
        Ok(d) if d.is_zero() => Err(SloError::NotPositive(s.to_string())),
        Ok(d) if d <= crate::HORIZON => Ok(d),
        _ => Err(SloError::TooLong(s.to_string())),
    }
}

impl FromStr for Slo {
    type Err = SloError;

    /// `ttft<=200ms,tpot<=50ms,e2e<=10s,itl_max<=500ms` and/or
    /// `ttft:p95<=200ms,tpot:p99<=40ms`.
    fn from_str(s: &str) -> Result<Self, SloError> {
        let mut slo = Slo::default();
        // The latency terms read so far, to refuse one given twice.
        let mut terms: Vec<(SloMetric, Option<f64>, String)> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if let Some(rhs) = part.strip_prefix("attainment").and_then(|r| r.trim_start().strip_prefix(">=")) {
                let share = parse_share(rhs).ok_or_else(|| SloError::NotAShare { term: part.to_string() })?;
                if let Some(first) = slo.attainment {
                    return Err(SloError::AttainmentTwice {
                        first: format!("attainment>={first}"),
                        second: part.to_string(),
                    });
                }
                slo.attainment = Some(share);
                continue;
            }
            if part.contains(">=") {
                parse_quality_term(&mut slo, part)?;
                continue;
            }
            let (lhs, rhs) = part.split_once("<=").ok_or_else(|| SloError::NeedsAtMost { term: part.to_string() })?;
            // A quality score bounded from above: its bound is no time.
            let name = lhs.split_once(':').map_or(lhs, |(m, _)| m).trim();
            if name.parse::<QualityMetric>().is_ok() {
                return Err(SloError::QualityAtMost {
                    term: part.to_string(),
                    metric: lhs.trim().to_string(),
                    value: rhs.trim().to_string(),
                });
            }
            let max = parse_limit(rhs).map_err(|e| e.in_term(part))?;
            match lhs.split_once(':') {
                None => {
                    let metric: SloMetric = lhs.parse()?;
                    if let Some((_, _, first)) = terms.iter().find(|(m, p, _)| *m == metric && p.is_none()) {
                        return Err(SloError::TermTwice {
                            what: format!("every request's {}", metric.as_str()),
                            first: first.clone(),
                            second: part.to_string(),
                        });
                    }
                    terms.push((metric, None, part.to_string()));
                    slo.limits.push(Limit { metric, max })
                }
                Some((m, p)) => {
                    let percentile: f64 = p
                        .trim()
                        .strip_prefix('p')
                        .map(|v| v.replace('_', "."))
                        // A plain decimal: p1e-320 would be shown in 300 digits.
                        .filter(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
                        .and_then(|v| v.parse().ok())
                        // p0 is no percentile a run reports (the reports read (0, 100]).
                        .filter(|v| *v > 0.0 && *v <= 100.0)
                        .ok_or_else(|| SloError::NotAPercentile {
                            term: part.to_string(),
                            percentile: p.to_string(),
                        })?;
                    let metric: SloMetric = m.parse()?;
                    if let Some((_, _, first)) = terms.iter().find(|(m, p, _)| *m == metric && *p == Some(percentile)) {
                        return Err(SloError::TermTwice {
                            what: format!("{}'s p{percentile}", metric.as_str()),
                            first: first.clone(),
                            second: part.to_string(),
                        });
                    }
                    terms.push((metric, Some(percentile), part.to_string()));
                    slo.objectives.push(Objective { metric, percentile, max });
                }
            }
        }
        if slo.limits.is_empty()
            && slo.objectives.is_empty()
            && slo.quality_limits.is_empty()
            && slo.quality_objectives.is_empty()
        {
            return match slo.attainment {
                Some(a) => Err(SloError::AttainmentAlone(a)),
                None => Err(SloError::Empty),
            };
        }
        Ok(slo)
    }
}

/// `0.95` or `95%`: a share above 0 and at most 1.
pub fn parse_share(s: &str) -> Option<f64> {
    let s = s.trim();
    let v = match s.strip_suffix('%') {
        Some(pct) => pct.trim().parse::<f64>().ok()? / 100.0,
        None => s.parse::<f64>().ok()?,
    };
    (v.is_finite() && v > 0.0 && v <= 1.0).then_some(v)
}

impl Slo {
    /// Its quality terms, per request and over the run, each as written with
    /// its metric.
    pub fn quality_terms(&self) -> Vec<(String, QualityMetric)> {
        let limits = self.quality_limits.iter().map(|l| (l.to_string(), l.metric));
        limits.chain(self.quality_objectives.iter().map(|o| (o.to_string(), o.metric))).collect()
    }

    /// Its latency terms alone (what judges a run that writes no answers),
    /// the attainment with them where a limit is left; `None` where nothing
    /// else is.
    pub fn timing_only(&self) -> Option<Slo> {
        let mut slo = Slo { quality_limits: Vec::new(), quality_objectives: Vec::new(), ..self.clone() };
        if slo.limits.is_empty() {
            slo.attainment = None;
        }
        (!slo.limits.is_empty() || !slo.objectives.is_empty()).then_some(slo)
    }

    /// The share of judged requests that must be good.
    pub fn attainment_target(&self) -> f64 {
        self.attainment.unwrap_or(DEFAULT_ATTAINMENT)
    }

    /// Whether the run's share of good requests is judged: per-request
    /// limits (latency or quality) say only what a good request is, so they
    /// pass or fail by their attainment; percentile objectives carry their
    /// own share (a p95 is 95%) and are judged by their percentile alone,
    /// unless the SLO names an attainment target.
    pub fn judges_attainment(&self) -> bool {
        !self.limits.is_empty() || !self.quality_limits.is_empty() || self.attainment.is_some()
    }

    /// Whether `r` succeeded and meets every per-request limit. A percentile
    /// objective bounds each request too (`ttft:p95<=200ms` makes a request
    /// with TTFT over 200 ms not good, and passes when 95% are within), as
    /// DistServe defines goodput: otherwise an SLO of objectives alone would
    /// count every success as good, however slow. A TPOT or ITL term the
    /// request did not let be measured is not met ([`SloMetric::unmeasured`]).
    pub fn is_good(&self, r: &RequestRecord) -> bool {
        let within = |m: SloMetric, max: Duration| !m.unmeasured(r) && m.of(r).is_none_or(|v| v <= max);
        self.meets_limits(r) && self.objectives.iter().all(|o| within(o.metric, o.max))
    }

    /// Whether `r` succeeded and meets every per-request limit and quality
    /// limit, the objectives' thresholds aside: what the attainment judged
    /// against its target counts, where the SLO has limits.
    pub fn meets_limits(&self, r: &RequestRecord) -> bool {
        let within = |m: SloMetric, max: Duration| !m.unmeasured(r) && m.of(r).is_none_or(|v| v <= max);
        r.outcome.is_success()
            && self.limits.iter().all(|l| within(l.metric, l.max))
            && self.quality_limits.iter().all(|l| {
                // A request with no reference has no score to fall short.
                r.quality.as_ref().and_then(|q| q.get(l.metric.as_str())).is_none_or(|v| v >= l.min)
            })
    }

    /// Whether the SLO has per-request limits (time or quality): then the
    /// attainment judged against its target counts them alone, and a
    /// percentile objective is judged by its percentile. Counted with every
    /// objective's threshold, `ttft<=10s,ttft:p50<=224ms` had failed a run
    /// whose median TTFT was 223 ms and every request within 10 s: 62% of
    /// the requests were within 224 ms, short of the 90% target, which made
    /// a p50 objective a p90 one.
    pub fn has_limits(&self) -> bool {
        !self.limits.is_empty() || !self.quality_limits.is_empty()
    }
}

impl Slo {
    /// Whether `r`, cancelled before it ended, had certainly missed a
    /// per-request bound (a limit, or an objective's bound on each request)
    /// when it was cancelled: no first token after more than a TTFT bound
    /// (or a first token later than it), or more than an E2E bound gone.
    /// A request cancelled before any bound passed could still have met
    /// them all, so it is left out of the attainment; this one is not.
    pub fn certainly_missed(&self, r: &RequestRecord) -> bool {
        self.missed_when_cancelled(r, true)
    }

    /// [`Slo::certainly_missed`] by a per-request limit, the objectives'
    /// thresholds aside ([`Slo::meets_limits`]).
    pub fn certainly_missed_a_limit(&self, r: &RequestRecord) -> bool {
        self.missed_when_cancelled(r, false)
    }

    /// Whether cancelled `r` had certainly missed a limit, or with
    /// `objectives` an objective's bound on each request too.
    fn missed_when_cancelled(&self, r: &RequestRecord, objectives: bool) -> bool {
        let elapsed = r.end.saturating_sub(r.sent);
        let missed = |m: SloMetric, max: Duration| match m {
            SloMetric::Ttft => r.ttft().unwrap_or(elapsed) > max,
            SloMetric::E2e => elapsed > max,
            _ => false,
        };
        matches!(r.outcome, Outcome::Cancelled)
            && (self.limits.iter().any(|l| missed(l.metric, l.max))
                || (objectives && self.objectives.iter().any(|o| missed(o.metric, o.max))))
    }

    /// Whether the attainment held to the target counts the limits alone:
    /// beside percentile objectives, each judged by its own percentile
    /// ([`Slo::has_limits`]); else it counts every threshold, as goodput does.
    pub fn attains_by_limits(&self) -> bool {
        self.has_limits() && !self.objectives.is_empty()
    }

    /// Whether `r` counts as met in the attainment held to the target
    /// ([`Slo::attains_by_limits`]).
    pub fn attains(&self, r: &RequestRecord) -> bool {
        if self.attains_by_limits() {
            self.meets_limits(r)
        } else {
            self.is_good(r)
        }
    }

    /// The quality limits (`exact>=…` per request) that no request of
    /// `judged` was scored by: with any, no request is good (`judge`).
    pub fn unscored_limits(&self, judged: &[&RequestRecord]) -> Vec<String> {
        let scored = |l: &QualityLimit| {
            judged.iter().any(|r| r.quality.as_ref().is_some_and(|q| q.get(l.metric.as_str()).is_some()))
        };
        self.quality_limits.iter().filter(|l| !scored(l)).map(|l| l.to_string()).collect()
    }

    /// Whether `r`, cancelled, counts as a miss in the attainment held to
    /// the target beside the requests judged: one that had certainly
    /// missed what [`Slo::attains`] counts (the limits alone beside
    /// objectives, else every threshold). The verdict and `--stop-on-slo`
    /// both count by it.
    pub fn attainment_counts_cancelled(&self, r: &RequestRecord) -> bool {
        if self.attains_by_limits() {
            self.certainly_missed_a_limit(r)
        } else {
            self.certainly_missed(r)
        }
    }
}

/// `summary.goodput` of the result (docs/result.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Goodput {
    /// Good requests per second of the window.
    pub requests_per_s: f64,
    /// Output tokens of good requests per second of the window.
    pub output_tokens_per_s: f64,
    /// Good requests over all measured requests that finished (success or failure).
    pub slo_attainment: f64,
    /// Output tokens of good requests over all output tokens generated,
    /// failed, timed-out and cancelled requests included.
    pub useful_work: f64,
    pub good_requests: u64,
    pub judged_requests: u64,
}

/// One percentile objective, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ObjectiveResult {
    /// The objective as written, e.g. `ttft:p95<=200ms`.
    pub objective: String,
    pub metric: SloMetric,
    pub percentile: f64,
    pub limit_ms: f64,
    /// Over the judged requests, each failure counted as infinitely slow
    /// (as `summary.error_adjusted` counts them): `null` when the percentile
    /// falls among the failures, or when no request was judged.
    pub measured_ms: Option<f64>,
    /// The judged requests that failed, each a sample above any limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u64,
    /// The judged requests that gave the objective a sample (failures
    /// included).
    #[serde(default)]
    pub samples: u64,
    pub pass: bool,
}

impl ObjectiveResult {
    /// Where the objective passed on samples too few to bound its
    /// percentile from above at `confidence` (its interval's upper side is
    /// `—`), why in words: `5 requests cannot bound a p99 at 95%
    /// confidence: give 368 or more`. None where it failed, or is bounded;
    /// none for a maximum (p100: no run bounds one, and a gate on the
    /// slowest request says what it says), nor for a document written
    /// before `samples` was kept (0 there is a count not known).
    pub fn unbounded_pass(&self, confidence: f64) -> Option<String> {
        use crate::analysis::interval::{percentile_ranks, samples_to_bound};
        if !self.pass
            || self.samples == 0
            || self.percentile >= 100.0
            || !crate::analysis::interval::valid_confidence(confidence)
        {
            return None;
        }
        let (_, upper, _) = percentile_ranks(self.samples, self.percentile / 100.0, confidence);
        (upper > self.samples).then(|| {
            let need =
                samples_to_bound(self.percentile, confidence).map_or(String::new(), |n| format!(": give {n} or more"));
            format!(
                "{} request{} cannot bound a p{} at {}% confidence{need}",
                self.samples,
                if self.samples == 1 { "" } else { "s" },
                self.percentile,
                confidence * 100.0
            )
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One run-level quality objective, judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct QualityObjectiveResult {
    /// The objective as written, e.g. `exact>=0.8`.
    pub objective: String,
    pub metric: QualityMetric,
    pub min: f64,
    /// The run's figure; `null` when no request was scored for it.
    pub measured: Option<f64>,
    pub pass: bool,
}

/// The per-request limits judged together: the share of judged requests
/// that met every limit, against the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct AttainmentResult {
    /// The share that must be good (`attainment>=`, `--attainment`, 0.9 by default).
    pub target: f64,
    /// The share that was: `summary.goodput.slo_attainment` where the SLO
    /// has no percentile objectives beside its limits; with both, the
    /// share that met the limits (goodput counts the objectives'
    /// thresholds too, and a `ttft:p50` objective is judged by its p50).
    pub measured: f64,
    pub good_requests: u64,
    pub judged_requests: u64,
    /// `measured >= target`, and at least one request judged.
    pub pass: bool,
    /// True where the SLO has percentile objectives beside its limits and
    /// `measured` counted the limits alone ([`Slo::attains_by_limits`]).
    /// Absent otherwise, and in a document written before the limits were
    /// counted alone: there, beside objectives, `measured` is the share
    /// that met every threshold, as `summary.goodput.slo_attainment` is,
    /// and the reports name it so.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_limits: bool,
}

/// The `slo` block of a result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SloReport {
    /// The SLO as written.
    pub spec: String,
    pub limits: Vec<String>,
    pub objectives: Vec<ObjectiveResult>,
    /// Run-level quality objectives (`exact>=0.8`, `bleu>=20`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quality: Vec<QualityObjectiveResult>,
    /// The per-request limits' attainment, judged; absent when the SLO has
    /// only percentile objectives (and no `attainment>=` term), or in a
    /// document written before limits had a target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attainment: Option<AttainmentResult>,
    /// The per-request quality limits (`rouge_l>=0.5`) that no judged
    /// request was scored by: no answer had a reference, or the limit's
    /// scorer was not among `--score`. Each fails the SLO, as a run-level
    /// term with no scored request does (a request without a score has
    /// nothing to fall short of, so such a limit had passed every request).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unscored: Vec<String>,
    /// Every objective met, and the limits' attainment reached (true when
    /// there are none).
    pub pass: bool,
}

impl SloReport {
    /// Every threshold a good request meets: the per-request limits, and
    /// each percentile objective's limit (`ttft<=200ms` of
    /// `ttft:p95<=200ms`), as [`Slo::is_good`] counts them.
    pub fn thresholds(&self) -> Vec<String> {
        let mut out: Vec<String> = self.limits.clone();
        for o in &self.objectives {
            let limit = o.objective.split_once("<=").map_or(o.objective.as_str(), |(_, l)| l);
            let t = format!("{}<={limit}", o.metric.as_str());
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }

    /// What the attainment counts, in words: the limits where there are
    /// any ([`Slo::has_limits`]), or, for objectives with an attainment of
    /// their own, every threshold. Beside objectives in a document written
    /// before the limits were counted alone (no `by_limits`), every
    /// threshold too: that is what its share counted.
    pub fn attainment_label(&self) -> String {
        if !self.limits.is_empty() && (self.objectives.is_empty() || self.attains_by_limits()) {
            self.limits.join(",")
        } else {
            format!("every threshold ({})", self.thresholds().join(", "))
        }
    }

    /// Whether the judged attainment counted the limits alone (limits and
    /// percentile objectives both: [`Slo::attains_by_limits`]), where
    /// goodput's share counts every threshold; as the attainment says
    /// ([`AttainmentResult::by_limits`]), so a document written before,
    /// whose share beside objectives counted every threshold, is false.
    pub fn attains_by_limits(&self) -> bool {
        !self.limits.is_empty() && !self.objectives.is_empty() && self.attainment.as_ref().is_some_and(|a| a.by_limits)
    }

    /// The limits' attainment the verdict held to its target, where it
    /// counted them alone: the limits without objectives, or beside them
    /// ([`SloReport::attains_by_limits`]). `None` for an SLO without
    /// limits, and for a document written before the limits were counted
    /// alone beside objectives (its share counted every threshold).
    pub fn limits_attainment(&self) -> Option<f64> {
        let a = self.attainment.as_ref()?;
        (!self.limits.is_empty() && (self.objectives.is_empty() || a.by_limits)).then_some(a.measured)
    }

    /// What `summary.goodput.slo_attainment` is called beside the verdict:
    /// the attainment, or, where goodput counts objectives' thresholds the
    /// judged attainment does not (limits and objectives both), the share
    /// that met every threshold.
    pub fn goodput_share_label(&self) -> &'static str {
        if self.attains_by_limits() {
            "met every threshold"
        } else {
            "attainment"
        }
    }

    /// Each objective that passed on too few samples to bound its
    /// percentile from above at `confidence`, in words (the sample size
    /// that would).
    pub fn unbounded_passes(&self, confidence: f64) -> Vec<String> {
        self.objectives
            .iter()
            .filter_map(|o| o.unbounded_pass(confidence).map(|why| format!("slo: {} passed, but {why}", o.objective)))
            .collect()
    }

    /// What failed, in words: each objective missed and the limits'
    /// attainment where short (empty when the SLO passed).
    pub fn misses(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .objectives
            .iter()
            .filter(|o| !o.pass)
            .map(|o| match o.measured_ms {
                Some(m) => format!("{} measured {m:.1} ms", o.objective),
                None if o.failures > 0 => format!(
                    "{}: {} of its {} requests failed, and the p{} falls among them (a failure never meets it)",
                    o.objective, o.failures, o.samples, o.percentile
                ),
                None => format!(
                    "{} had no request to measure (none succeeded, or none gave it a sample: a TPOT needs two \
                     tokens, streamed apart)",
                    o.objective
                ),
            })
            .collect();
        out.extend(self.quality.iter().filter(|q| !q.pass).map(|q| match q.measured {
            Some(m) => format!("{} measured {m:.3}", q.objective),
            None => format!("{} had no scored request", q.objective),
        }));
        out.extend(self.unscored.iter().map(|l| {
            format!(
                "{l} had no scored request (only a successful answer with a reference is scored: --dataset FILE \
                 whose lines carry a \"reference\", and that scorer among --score, or every one when --score is \
                 left out)"
            )
        }));
        if let Some(a) = self.attainment.as_ref().filter(|a| !a.pass) {
            let what = if self.objectives.is_empty() { "the limits".to_string() } else { self.attainment_label() };
            out.push(format!(
                "{} of {} requests met {what} ({:.1}%), short of the {:.1}% target",
                a.good_requests,
                a.judged_requests,
                a.measured * 100.0,
                a.target * 100.0
            ));
        }
        out
    }
}

/// Judges `records` (the measured ones, warm-up excluded) against `slo`
/// over a window of `window_s` seconds.
pub fn judge(records: &[RequestRecord], slo: &Slo, window_s: f64) -> (Goodput, SloReport) {
    let measured: Vec<&RequestRecord> = records.iter().filter(|r| !r.warmup).collect();
    let judged: Vec<&RequestRecord> =
        measured.iter().copied().filter(|r| !matches!(r.outcome, Outcome::Cancelled)).collect();
    let unscored = slo.unscored_limits(&judged);
    // A limit no request was scored by judged none of them: none is good
    // (each had passed it, and a failed SLO had shown 100% attainment).
    let good: Vec<&RequestRecord> = judged.iter().copied().filter(|r| unscored.is_empty() && slo.is_good(r)).collect();
    let good_tokens = crate::analysis::stats::total(good.iter().map(|r| r.output_tokens));
    let all_tokens = crate::analysis::stats::total(measured.iter().map(|r| r.output_tokens));
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    // The attainment counts, beside the judged requests, those cancelled
    // after they had certainly missed a bound: an overloaded run cut at its
    // end, its later requests waiting past the TTFT limit, had shown 100%.
    let missed = measured.iter().filter(|r| slo.certainly_missed(r)).count();
    let goodput = Goodput {
        requests_per_s: per_s(good.len() as f64),
        output_tokens_per_s: per_s(good_tokens as f64),
        slo_attainment: ratio(good.len() as f64, (judged.len() + missed) as f64),
        useful_work: ratio(good_tokens as f64, all_tokens as f64),
        good_requests: good.len() as u64,
        judged_requests: (judged.len() + missed) as u64,
    };
    let objectives: Vec<ObjectiveResult> = slo
        .objectives
        .iter()
        .map(|o| {
            // A failed request is a sample above any limit: it never got its
            // first token (or its answer) in time. Objectives over the
            // successes alone had passed `ttft:p90<=200ms` with 93% of the
            // requests failed. A TPOT of output that came all at once is no
            // sample (its 0 had passed any limit), nor is a one-token
            // answer's undefined TPOT.
            let failures = judged.iter().filter(|r| !r.outcome.is_success()).count() as u64;
            let mut v: Vec<f64> = judged
                .iter()
                .filter(|r| r.outcome.is_success() && !o.metric.unmeasured(r))
                .filter_map(|r| o.metric.of(r))
                .map(ms)
                .chain((0..failures).map(|_| f64::INFINITY))
                .collect();
            let samples = v.len() as u64;
            let measured =
                Distribution::from_samples(&mut v, &[o.percentile]).p(o.percentile).filter(|m| m.is_finite());
            let limit_ms = ms(o.max);
            ObjectiveResult {
                objective: o.to_string(),
                metric: o.metric,
                percentile: o.percentile,
                limit_ms,
                measured_ms: measured,
                failures,
                samples,
                pass: measured.is_some_and(|m| m <= limit_ms),
            }
        })
        .collect();
    let scores = (!slo.quality_objectives.is_empty()).then(|| crate::quality::summary::scores_of(&measured));
    let quality: Vec<QualityObjectiveResult> = slo
        .quality_objectives
        .iter()
        .map(|o| {
            let measured = scores.as_ref().and_then(|s| o.metric.of_run(s));
            QualityObjectiveResult {
                objective: o.to_string(),
                metric: o.metric,
                min: o.min,
                measured,
                pass: measured.is_some_and(|m| m >= o.min),
            }
        })
        .collect();
    let attainment = slo.judges_attainment().then(|| {
        let target = slo.attainment_target();
        // The limits alone where there are any ([`Slo::has_limits`]); an
        // SLO of objectives that names an attainment counts their thresholds.
        let (good, judged) = if slo.attains_by_limits() {
            let good = judged.iter().filter(|r| unscored.is_empty() && slo.attains(r)).count() as u64;
            let missed = measured.iter().filter(|r| slo.attainment_counts_cancelled(r)).count();
            (good, (judged.len() + missed) as u64)
        } else {
            (goodput.good_requests, goodput.judged_requests)
        };
        let share = ratio(good as f64, judged as f64);
        AttainmentResult {
            target,
            measured: share,
            good_requests: good,
            judged_requests: judged,
            pass: judged > 0 && share >= target,
            by_limits: slo.attains_by_limits(),
        }
    });
    let report = SloReport {
        spec: slo.to_string(),
        limits: slo
            .limits
            .iter()
            .map(|l| l.to_string())
            .chain(slo.quality_limits.iter().map(|l| l.to_string()))
            .collect(),
        pass: objectives.iter().all(|o| o.pass)
            && quality.iter().all(|q| q.pass)
            && attainment.as_ref().is_none_or(|a| a.pass)
            && unscored.is_empty(),
        objectives,
        quality,
        attainment,
        unscored,
    };
    (goodput, report)
}

/// The JSON key of an objective's percentile (`p95`, `p99_9`).
pub fn objective_key(o: &Objective) -> String {
    format!("{}_{}", o.metric.as_str(), percentile_key(o.percentile))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::record::{Channel, FailureKind, OutputChunk};

    fn req(ttft_ms: u64, gap_ms: u64, n: u64) -> RequestRecord {
        let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
        r.chunks = (0..n)
            .map(|i| OutputChunk {
                t: Duration::from_millis(ttft_ms + i * gap_ms),
                tokens: 1,
                channel: Channel::Content,
            })
            .collect();
        r.end = r.chunks.last().unwrap().t;
        r.output_tokens = n;
        r.outcome = Outcome::Success;
        r
    }

    #[test]
    fn a_limit_prints_back_as_it_was_given() {
        // 150.1ms had come back as 150.10000000000002ms.
        for (given, shown) in [
            ("ttft<=150.1ms", "ttft<=150.1ms"),
            ("ttft<=0.5ms", "ttft<=0.5ms"),
            ("tpot<=33.333ms", "tpot<=33.333ms"),
            ("e2e<=1.5s", "e2e<=1500ms"),
            ("e2e<=2s", "e2e<=2s"),
            ("ttft<=250us", "ttft<=0.25ms"),
        ] {
            let s: Slo = given.parse().unwrap();
            assert_eq!(s.to_string(), shown, "{given}");
            assert_eq!(s.to_string().parse::<Slo>().unwrap(), s, "{given} reads back the same");
        }
    }

    #[test]
    fn parses_limits_and_objectives_and_prints_them_back() {
        let s: Slo = "ttft<=200ms,tpot<=50ms,e2e<=10s,itl_max<=500ms".parse().unwrap();
        assert_eq!(s.limits.len(), 4);
        assert_eq!(s.limits[2], Limit { metric: SloMetric::E2e, max: Duration::from_secs(10) });
        assert_eq!(s.to_string(), "ttft<=200ms,tpot<=50ms,e2e<=10s,itl_max<=500ms");
        let o: Slo = "ttft:p95<=200ms, tpot:p99.9<=40ms".parse().unwrap();
        assert_eq!(
            o.objectives[1],
            Objective { metric: SloMetric::Tpot, percentile: 99.9, max: Duration::from_millis(40) }
        );
        assert_eq!(o.to_string(), "ttft:p95<=200ms,tpot:p99.9<=40ms");
        for (bad, want) in [
            ("ttft<200ms", "needs '<='"),
            ("ttft<=200", "needs a unit an SLO takes"),
            ("ttft<=1e-300ms", "must be a positive duration"),
            ("ttft:p1e-320<=1s", "percentile"),
            ("latency<=1s", "unknown SLO metric"),
            ("ttft:q95<=1s", "percentile"),
            ("ttft<=-1s", "positive"),
            ("", "empty"),
            // A time's bound the wrong way round: it had been "'1s' is not a number".
            ("ttft>=1s", "ttft is a time, bounded from above: write ttft<=1s"),
            ("tpot:p99>=40ms", "write tpot:p99<=40ms"),
            // A quality score's bound the wrong way round: it had been
            // "'0.5' needs a unit an SLO takes".
            ("exact<=0.5", "exact is a quality score, bounded from below: write exact>=0.5"),
            ("rouge_l:mean<=0.3", "write rouge_l:mean>=0.3"),
            // Capitals, and the quality scores among the names offered
            // (it had offered the five times alone).
            ("TTFT<=500ms", "metric names are lower case: ttft"),
            ("latency<=1s", "or exact, number, rouge_l, chrf, bleu or chrf_corpus for quality scores"),
        ] {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    /// Beside limits, a percentile objective is judged by its percentile
    /// alone: the attainment counts the limits, and goodput every
    /// threshold (DistServe's good request). Counted with every objective's
    /// threshold against the 90% target, `ttft<=10s,ttft:p50<=...` had
    /// failed runs whose median met the objective.
    #[test]
    fn beside_limits_an_objective_is_judged_by_its_percentile() {
        // Ten requests, every one within 10 s, six of them within 300 ms.
        let recs: Vec<RequestRecord> = (0..10).map(|i| req(if i < 6 { 100 } else { 900 }, 10, 10)).collect();
        let (goodput, rep) = judge(&recs, &"ttft<=10s,ttft:p50<=300ms".parse().unwrap(), 1.0);
        assert!(rep.pass, "{:?}", rep.misses());
        let a = rep.attainment.as_ref().unwrap();
        assert_eq!((a.good_requests, a.judged_requests, a.measured), (10, 10, 1.0));
        assert_eq!(rep.attainment_label(), "ttft<=10s");
        assert_eq!(goodput.good_requests, 6, "goodput meets every threshold");
        assert_eq!(rep.goodput_share_label(), "met every threshold");
        // A limit missed still fails it, by the limits' own share.
        let (_, tight) = judge(&recs, &"ttft<=500ms,ttft:p50<=300ms".parse().unwrap(), 1.0);
        assert!(!tight.pass);
        assert!(
            tight.misses().iter().any(|m| m.starts_with("6 of 10 requests met ttft<=500ms")),
            "{:?}",
            tight.misses()
        );
        // Objectives alone with an attainment of their own count their thresholds.
        let two = vec![req(100, 10, 10), req(900, 10, 10)];
        let (_, own) = judge(&two, &"ttft:p50<=200ms,attainment>=0.9".parse().unwrap(), 1.0);
        assert_eq!(own.attainment_label(), "every threshold (ttft<=200ms)");
        assert_eq!(own.goodput_share_label(), "attainment");
        assert!(!own.pass, "1 of 2 within 200 ms is short of 90%");
        let (_, limits) = judge(&two, &"tpot<=50ms,ttft<=1s".parse().unwrap(), 1.0);
        assert_eq!(limits.attainment_label(), "tpot<=50ms,ttft<=1s");
    }

    /// The attainment says it counted the limits alone beside objectives
    /// (`by_limits`), so a document written before, whose share there
    /// counted every threshold as goodput's does, reads as what it is: the
    /// share named by every threshold, goodput's as the attainment, and no
    /// limits' attainment (its 60% had been named `ttft<=10s`, the limit
    /// every request met).
    #[test]
    fn an_older_document_names_its_share_by_every_threshold() {
        let recs: Vec<RequestRecord> = (0..10).map(|i| req(if i < 6 { 100 } else { 900 }, 10, 10)).collect();
        let (_, rep) = judge(&recs, &"ttft<=10s,ttft:p50<=300ms".parse().unwrap(), 1.0);
        let json = serde_json::to_value(&rep).unwrap();
        assert_eq!(json["attainment"]["by_limits"], true);
        assert!(rep.attains_by_limits());
        assert_eq!(rep.limits_attainment(), Some(1.0));
        // Limits alone: the share is the limits' and goodput's; no marker written.
        let (_, limits) = judge(&recs, &"ttft<=10s".parse().unwrap(), 1.0);
        assert!(serde_json::to_value(&limits).unwrap()["attainment"].get("by_limits").is_none());
        assert!(!limits.attains_by_limits());
        assert_eq!((limits.limits_attainment(), limits.goodput_share_label()), (Some(1.0), "attainment"));
        // Objectives alone with a target: every threshold, no limits' share.
        let (_, own) = judge(&recs, &"ttft:p50<=300ms,attainment>=0.5".parse().unwrap(), 1.0);
        assert_eq!(own.limits_attainment(), None);
        // The same SLO as saved before: its share counted every threshold.
        let old: SloReport = serde_json::from_value(serde_json::json!({
            "spec": "ttft<=10s,ttft:p50<=300ms",
            "limits": ["ttft<=10s"],
            "objectives": json["objectives"],
            "attainment": {"target": 0.9, "measured": 0.6, "good_requests": 6, "judged_requests": 10, "pass": false},
            "pass": false,
        }))
        .unwrap();
        assert!(!old.attains_by_limits());
        assert_eq!(old.attainment_label(), "every threshold (ttft<=10s, ttft<=300ms)");
        assert_eq!(old.goodput_share_label(), "attainment");
        assert_eq!(old.limits_attainment(), None);
        assert_eq!(
            old.misses(),
            ["6 of 10 requests met every threshold (ttft<=10s, ttft<=300ms) (60.0%), short of the 90.0% target"]
        );
    }

    /// A p99 met on two requests passes, and says it cannot be bounded.
    #[test]
    fn a_pass_on_too_few_samples_to_bound_it_is_said() {
        let recs = vec![req(100, 10, 10), req(150, 10, 10)];
        let (_, rep) = judge(&recs, &"ttft:p99<=200ms".parse().unwrap(), 1.0);
        assert!(rep.pass);
        assert_eq!(
            rep.unbounded_passes(0.95),
            ["slo: ttft:p99<=200ms passed, but 2 requests cannot bound a p99 at 95% confidence: give 368 or more"]
        );
        let many: Vec<_> = (0..400).map(|_| req(100, 10, 10)).collect();
        assert!(judge(&many, &"ttft:p99<=200ms".parse().unwrap(), 1.0).1.unbounded_passes(0.95).is_empty());
        let (_, failed) = judge(&recs, &"ttft:p99<=120ms".parse().unwrap(), 1.0);
        assert!(!failed.pass && failed.unbounded_passes(0.95).is_empty());
        // A maximum is never bounded, at any size: not told on every run.
        assert!(judge(&many, &"ttft:p100<=200ms".parse().unwrap(), 1.0).1.unbounded_passes(0.95).is_empty());
        // A document saved before `samples` was kept reads it as 0: a count
        // not known, not "0 requests cannot bound a p99".
        let mut old = judge(&many, &"ttft:p99<=200ms".parse().unwrap(), 1.0).1;
        old.objectives[0].samples = 0;
        assert!(old.unbounded_passes(0.95).is_empty());
    }

    /// A request cancelled at the run's end after it had waited past the
    /// TTFT limit with no first token (or past an E2E limit) certainly
    /// missed, and counts against the attainment; one cancelled before any
    /// limit passed is left out (an overloaded run cut at its end had
    /// shown 100%).
    #[test]
    fn a_request_cancelled_after_a_limit_passed_counts_as_missed() {
        let cut = |ttft_ms: Option<u64>, ended_ms: u64| {
            let mut r = req(ttft_ms.unwrap_or(0), 10, 1);
            if ttft_ms.is_none() {
                r.chunks = Vec::new().into();
            }
            r.end = Duration::from_millis(ended_ms);
            r.outcome = Outcome::Cancelled;
            r
        };
        let slo: Slo = "ttft<=200ms".parse().unwrap();
        let recs = vec![
            req(100, 10, 10),
            req(150, 10, 10),
            cut(None, 5000),
            cut(Some(900), 1000),
            cut(None, 150),
            cut(Some(100), 5000),
        ];
        assert_eq!(
            recs.iter().map(|r| slo.certainly_missed(r)).collect::<Vec<_>>(),
            [false, false, true, true, false, false]
        );
        let (g, _) = judge(&recs, &slo, 1.0);
        assert_eq!((g.good_requests, g.judged_requests), (2, 4));
        assert_eq!(g.slo_attainment, 0.5);
        // An E2E limit: past it once that much time went by, first token or not.
        let e2e: Slo = "e2e<=2s".parse().unwrap();
        assert!(e2e.certainly_missed(&cut(Some(100), 2500)) && !e2e.certainly_missed(&cut(Some(100), 1500)));
        // A TPOT limit is never certainly missed by a cut request.
        assert!(!"tpot<=1ms".parse::<Slo>().unwrap().certainly_missed(&cut(None, 60_000)));
        // A request that ended is judged as before, not by this.
        assert!(!slo.certainly_missed(&req(900, 10, 10)));
    }

    #[test]
    fn goodput_attainment_and_useful_work_by_hand() {
        // 4 requests: two good, one too slow to first token, one failed after 5 tokens.
        let mut recs = vec![req(100, 10, 10), req(150, 10, 10), req(900, 10, 10), req(100, 10, 5)];
        recs[3].outcome = Outcome::Failed { kind: FailureKind::MidStreamError, message: "x".into() };
        let mut cancelled = req(100, 10, 3);
        cancelled.outcome = Outcome::Cancelled;
        recs.push(cancelled);
        let slo: Slo = "ttft<=200ms,ttft:p50<=200ms".parse().unwrap();
        let (g, rep) = judge(&recs, &slo, 2.0);
        // An objective alone bounds each request the same way.
        let (g2, _) = judge(&recs, &"ttft:p50<=200ms".parse().unwrap(), 2.0);
        assert_eq!(g2, g);
        assert_eq!((g.good_requests, g.judged_requests), (2, 4));
        assert_eq!(g.requests_per_s, 1.0);
        assert_eq!(g.output_tokens_per_s, 10.0);
        assert_eq!(g.slo_attainment, 0.5);
        assert!((g.useful_work - 20.0 / 38.0).abs() < 1e-12);
        // p50 of the judged requests' TTFT (100, 150, 900, and the failure
        // as infinitely slow) is halfway from 150 to 900.
        assert_eq!(rep.objectives[0].measured_ms, Some(525.0));
        assert_eq!((rep.objectives[0].failures, rep.objectives[0].samples), (1, 4));
        assert!(!rep.objectives[0].pass);
        // Half the requests good: the limit misses the default 90% target,
        // and meets a target of a half.
        let a = rep.attainment.as_ref().unwrap();
        assert_eq!((a.target, a.measured, a.pass), (DEFAULT_ATTAINMENT, 0.5, false));
        assert!(!rep.pass);
        let half: Slo = "ttft<=200ms,attainment>=50%".parse().unwrap();
        assert!(judge(&recs, &half, 2.0).1.pass);
        // The objective alone is judged by its percentile, not by a target.
        let (_, alone) = judge(&recs, &"ttft:p25<=200ms".parse().unwrap(), 2.0);
        assert!(alone.attainment.is_none() && alone.pass);
        let strict: Slo = "ttft:p99<=200ms".parse().unwrap();
        assert!(!judge(&recs, &strict, 2.0).1.pass);
    }

    /// A percentile objective counts each failed request as a sample above
    /// its limit: 10 fast successes among 145 judged requests (135 failed)
    /// had passed `ttft:p90<=200ms`, at 6.9% attainment. A few failures
    /// below the percentile's share still pass it.
    #[test]
    fn a_percentile_objective_counts_failures_as_misses() {
        let failed = || {
            let mut r = req(100, 10, 2);
            r.outcome = Outcome::Failed { kind: FailureKind::HttpStatus, message: "x".into() };
            r
        };
        let slo: Slo = "ttft:p90<=200ms".parse().unwrap();
        let mut recs: Vec<RequestRecord> = (0..10).map(|_| req(50, 10, 5)).collect();
        recs.extend((0..135).map(|_| failed()));
        let (g, rep) = judge(&recs, &slo, 1.0);
        assert_eq!((g.good_requests, g.judged_requests), (10, 145));
        let o = &rep.objectives[0];
        assert_eq!((o.measured_ms, o.failures, o.samples, o.pass, rep.pass), (None, 135, 145, false, false));
        let said = rep.misses().join("; ");
        assert!(said.contains("135 of its 145 requests failed") && said.contains("p90 falls among them"), "{said}");
        // 2 failures in 100: the p90 is a success's, and passes.
        let mut few: Vec<RequestRecord> = (0..98).map(|_| req(50, 10, 5)).collect();
        few.extend((0..2).map(|_| failed()));
        let (_, rep) = judge(&few, &slo, 1.0);
        assert_eq!((rep.objectives[0].measured_ms, rep.pass), (Some(50.0), true));
        // A one-token answer's TPOT is no sample, and no failure.
        let (_, one) = judge(&[req(50, 10, 1), req(50, 10, 5)], &"tpot:p50<=20ms".parse().unwrap(), 1.0);
        assert_eq!((one.objectives[0].samples, one.objectives[0].failures, one.pass), (1, 0, true));
        // Only one-token answers: nothing to measure, and said so (it had
        // said no request succeeded).
        let (_, none) = judge(&[req(50, 10, 1)], &"tpot:p50<=20ms".parse().unwrap(), 1.0);
        let said = none.misses().join("; ");
        assert!(!none.pass && said.contains("a TPOT needs two tokens"), "{said}");
    }

    proptest::proptest! {
        /// Goodput never exceeds throughput, and the shares stay shares,
        /// whatever the mix of outcomes, latencies and limits.
        #[test]
        fn goodput_is_bounded_by_throughput(
            reqs in proptest::collection::vec((0u64..3, 1u64..2000, 1u64..50, 1u64..40), 1..60),
            limit_ms in 1u64..2000,
        ) {
            let recs: Vec<RequestRecord> = reqs
                .iter()
                .enumerate()
                .map(|(i, &(kind, ttft, gap, n))| {
                    let mut r = req(ttft, gap, n);
                    r.id = i as u64;
                    r.outcome = match kind {
                        0 => Outcome::Success,
                        1 => Outcome::Failed { kind: FailureKind::Timeout, message: String::new() },
                        _ => Outcome::Cancelled,
                    };
                    r
                })
                .collect();
            let slo: Slo = format!("ttft<={limit_ms}ms").parse().unwrap();
            let opts = crate::AnalysisOptions { slo: Some(slo), ..Default::default() };
            let a = crate::analyze(&recs, &opts);
            let g = a.summary.goodput.unwrap();
            let th = &a.summary.throughput;
            proptest::prop_assert!(g.requests_per_s <= th.requests_per_s + 1e-9);
            proptest::prop_assert!(g.output_tokens_per_s <= th.output_tokens_per_s + 1e-9);
            proptest::prop_assert!((0.0..=1.0).contains(&g.slo_attainment));
            proptest::prop_assert!((0.0..=1.0).contains(&g.useful_work));
        }
    }

    #[test]
    fn quality_terms_bound_requests_or_the_run() {
        let slo: Slo = "ttft<=1s,exact>=0.8,rouge_l>=0.3,chrf:mean>=40,bleu>=20".parse().unwrap();
        let terms: Vec<String> = slo.quality_terms().into_iter().map(|t| t.0).collect();
        assert_eq!(terms, ["rouge_l>=0.3", "exact>=0.8", "chrf:mean>=40", "bleu>=20"]);
        assert_eq!(slo.timing_only().map(|s| s.to_string()).as_deref(), Some("ttft<=1s"));
        assert_eq!("rouge_l>=0.3,attainment>=0.95".parse::<Slo>().unwrap().timing_only(), None);
        assert_eq!(slo.quality_limits, vec![QualityLimit { metric: QualityMetric::RougeL, min: 0.3 }]);
        assert_eq!(slo.quality_objectives.len(), 3);
        assert_eq!(slo.to_string(), "ttft<=1s,rouge_l>=0.3,exact>=0.8,chrf:mean>=40,bleu>=20");
        for (bad, want) in
            [("exact>=x", "not a number"), ("wer>=0.1", "unknown quality metric"), ("exact:p50>=1", "mean")]
        {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
        // Four answers: three right (ROUGE-L 1), one wrong (ROUGE-L 0), one unscored.
        let refs = vec!["paris".to_string()];
        let mut recs: Vec<RequestRecord> = ["Paris", "paris", "Paris.", "London", ""]
            .iter()
            .map(|a| {
                let mut r = req(100, 10, 3);
                r.quality = (!a.is_empty()).then(|| Box::new(crate::quality::score(a, &refs, &[]).unwrap()));
                r
            })
            .collect();
        recs[4].quality = None;
        let (g, rep) = judge(&recs, &"rouge_l>=0.3,exact>=0.8".parse().unwrap(), 1.0);
        assert_eq!((g.good_requests, g.judged_requests), (4, 5));
        assert_eq!(rep.quality[0].measured, Some(0.75));
        assert!(!rep.pass);
        assert!(judge(&recs, &"exact>=0.75".parse().unwrap(), 1.0).1.pass);
        assert!(rep.unscored.is_empty());
        // A limit whose scorer was not run (--score exact) had passed every
        // request, as had one of a run with no reference at all: it fails.
        let exact_only: Vec<RequestRecord> = ["Paris", "London"]
            .iter()
            .map(|a| {
                let mut r = req(100, 10, 3);
                r.quality = crate::quality::score(a, &refs, &[crate::quality::scoring::Scorer::Exact]).map(Box::new);
                r
            })
            .collect();
        for recs in [&exact_only[..], &[req(100, 10, 3), req(100, 10, 3)][..]] {
            let (g, rep) = judge(recs, &"rouge_l>=0.99".parse().unwrap(), 1.0);
            assert_eq!(
                (g.good_requests, rep.unscored.clone(), rep.pass),
                (0, vec!["rouge_l>=0.99".to_string()], false)
            );
            let said = rep.misses().join("; ");
            assert!(said.contains("rouge_l>=0.99 had no scored request") && said.contains("--score"), "{said}");
        }
    }

    #[test]
    fn a_limit_no_request_met_fails_and_one_every_request_met_passes() {
        let recs: Vec<RequestRecord> = (0..10).map(|_| req(50, 10, 5)).collect();
        let (g, rep) = judge(&recs, &"ttft<=10ms".parse().unwrap(), 1.0);
        assert_eq!(g.slo_attainment, 0.0);
        assert!(!rep.pass, "a limit no request met cannot pass");
        assert!(judge(&recs, &"ttft<=100ms".parse().unwrap(), 1.0).1.pass);
        // Nine of ten good: 90% meets the default target, 95% does not.
        let mut nine = recs.clone();
        nine[0] = req(500, 10, 5);
        assert!(judge(&nine, &"ttft<=100ms".parse().unwrap(), 1.0).1.pass);
        assert!(!judge(&nine, &"ttft<=100ms,attainment>=0.95".parse().unwrap(), 1.0).1.pass);
        // A quality limit is judged by its attainment the same way.
        let (_, q) = judge(&recs, &"rouge_l>=0.5".parse().unwrap(), 1.0);
        assert!(q.attainment.is_some());
        // No request judged: nothing was attained.
        assert!(!judge(&[], &"ttft<=100ms".parse().unwrap(), 1.0).1.pass);
    }

    #[test]
    fn the_attainment_term_reads_as_a_share_and_prints_back() {
        let s: Slo = "ttft<=200ms, attainment>=95%".parse().unwrap();
        assert_eq!(s.attainment, Some(0.95));
        assert_eq!(s.to_string(), "ttft<=200ms,attainment>=0.95");
        assert_eq!(s.to_string().parse::<Slo>().unwrap(), s);
        assert_eq!("ttft<=1s".parse::<Slo>().unwrap().attainment_target(), DEFAULT_ATTAINMENT);
        for (bad, want) in [
            ("ttft<=1s,attainment>=0", "above 0 and at most 1"),
            ("ttft<=1s,attainment>=1.5", "above 0 and at most 1"),
            ("ttft<=1s,attainment>=x", "above 0 and at most 1"),
            ("ttft<=1s,attainment>=0.9,attainment>=0.8", "twice"),
            ("attainment>=0.9", "no limit to attain"),
        ] {
            let e = bad.parse::<Slo>().unwrap_err().to_string();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn undefined_metrics_do_not_violate_limits() {
        let one = req(100, 0, 1);
        assert_eq!(one.tpot(), None);
        let slo: Slo = "tpot<=1ms,itl_max<=1ms".parse().unwrap();
        assert!(slo.is_good(&one));
    }

    /// A limit or a percentile objective given twice is refused, naming both
    /// (`ttft<=1s,ttft<=2s` had been taken, the tighter binding silently);
    /// a limit and an objective of one metric, or two percentiles, are not
    /// twice; p0 is no percentile.
    #[test]
    fn a_term_given_twice_or_a_p0_is_refused() {
        let e = "ttft<=1s,ttft<=2s".parse::<Slo>().unwrap_err().to_string();
        assert!(e.contains("'ttft<=1s' and 'ttft<=2s'") && e.contains("keep the one"), "{e}");
        let e = "tpot:p90<=10ms, tpot:p90<=20ms".parse::<Slo>().unwrap_err().to_string();
        assert!(e.contains("tpot's p90") && e.contains("'tpot:p90<=20ms'"), "{e}");
        let ok: Slo = "ttft<=1s,ttft:p95<=500ms,ttft:p99<=900ms,tpot<=50ms".parse().unwrap();
        assert_eq!((ok.limits.len(), ok.objectives.len()), (2, 2));
        assert!("ttft:p0<=80ms".parse::<Slo>().unwrap_err().to_string().contains("not a percentile"));
    }

    #[test]
    fn output_that_came_all_at_once_does_not_meet_tpot_or_itl_terms() {
        use crate::doc::record::{Channel, OutputChunk};
        let chunk =
            |ms: u64, tokens: u32| OutputChunk { t: Duration::from_millis(ms), tokens, channel: Channel::Content };
        let answer = |chunks: Vec<OutputChunk>, shared: u32| {
            let mut r = RequestRecord::new(0, Duration::ZERO, Duration::ZERO);
            r.output_tokens = chunks.iter().map(|c| u64::from(c.tokens)).sum();
            r.chunks = chunks.into_iter().collect();
            r.shared_reads = shared;
            r.outcome = Outcome::Success;
            r
        };
        // One JSON body of three tokens (a server that ignored stream: true).
        let whole = answer(vec![chunk(50, 3)], 0);
        // Five chunks in one read (a buffering proxy): a TPOT of 0.
        let buffered = answer((0..5).map(|_| chunk(50, 1)).collect(), 4);
        // Five chunks in five reads, 10 ms apart: measured.
        let streamed = answer((0..5).map(|i| chunk(50 + 10 * i, 1)).collect(), 0);
        let single = answer(vec![chunk(50, 1)], 0);
        assert_eq!((whole.tpot(), buffered.tpot()), (None, Some(Duration::ZERO)));
        assert!(unstreamed(&whole) && unstreamed(&buffered) && !unstreamed(&streamed) && !unstreamed(&single));
        for spec in ["tpot<=50ms", "itl_max<=50ms", "tpot:p90<=50ms"] {
            let slo: Slo = spec.parse().unwrap();
            assert!(!slo.is_good(&whole) && !slo.is_good(&buffered), "{spec}: nothing was measured");
            assert!(slo.is_good(&streamed) && slo.is_good(&single), "{spec}");
        }
        // A TTFT term is met as before: TTFT is defined (the whole answer's time).
        assert!("ttft<=1s".parse::<Slo>().unwrap().is_good(&whole));
        // An objective takes no sample of them: with only those, it has none.
        let slo: Slo = "tpot:p90<=50ms".parse().unwrap();
        let (g, report) = judge(&[whole.clone(), buffered.clone()], &slo, 1.0);
        assert_eq!((g.good_requests, report.objectives[0].measured_ms, report.pass), (0, None, false));
        let (g, report) = judge(&[whole, buffered, streamed], &slo, 1.0);
        assert_eq!((g.good_requests, report.objectives[0].measured_ms), (1, Some(10.0)));
    }
}
