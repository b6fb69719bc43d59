//! Metric paths into a run's result (`ttft_ms.p95`, `throughput.output_tokens_per_s`,
//! `error_rate`): the names `compare` and `--fail-if` speak, each with its
//! unit, which direction is better, and how to read it from a `RunResult`.

use crate::table::Detail;
use goodput_core::{Distribution, RunResult, Summary};
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

mod scalar;
pub use scalar::Scalar;

/// A latency distribution of the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dist {
    Ttft,
    TtftContent,
    Tpot,
    Itl,
    ChunkGap,
    ItlMax,
    E2e,
    Ttfb,
    ClientQueue,
    ClientReadLag,
    ErrorAdjustedTtft,
    ErrorAdjustedE2e,
}

impl Dist {
    pub const ALL: [Dist; 12] = [
        Dist::Ttft,
        Dist::TtftContent,
        Dist::Tpot,
        Dist::Itl,
        Dist::ChunkGap,
        Dist::ItlMax,
        Dist::E2e,
        Dist::Ttfb,
        Dist::ClientQueue,
        Dist::ClientReadLag,
        Dist::ErrorAdjustedTtft,
        Dist::ErrorAdjustedE2e,
    ];

    /// Everything about a distribution, one line each: its path in
    /// `summary`, its short name for tables, the detail level at which
    /// tables show it, when a run has it, and where it is read from. A new
    /// latency metric is a line here (and its place in [`Dist::ALL`]).
    fn spec(self) -> Spec {
        use Detail::{Full, Headline, Standard};
        use Presence::{Always, Counted, WithFailures};
        let spec = |key, label, detail, presence, of| Spec { key, label, detail, presence, of };
        match self {
            Dist::Ttft => spec("ttft_ms", "TTFT", Headline, Always, |s| &s.ttft_ms),
            Dist::TtftContent => spec("ttft_content_ms", "TTFT content", Standard, Always, |s| &s.ttft_content_ms),
            Dist::Tpot => spec("tpot_ms", "TPOT", Headline, Always, |s| &s.tpot_ms),
            Dist::Itl => spec("itl_ms", "ITL", Headline, Always, |s| &s.itl_ms),
            Dist::ChunkGap => spec("chunk_gap_ms", "chunk gap", Standard, Always, |s| &s.chunk_gap_ms),
            Dist::ItlMax => spec("itl_max_ms", "ITL max/req", Standard, Always, |s| &s.itl_max_ms),
            Dist::E2e => spec("e2e_ms", "E2E", Headline, Always, |s| &s.e2e_ms),
            Dist::Ttfb => spec("ttfb_ms", "TTFB", Headline, Always, |s| &s.ttfb_ms),
            Dist::ClientQueue => spec("client_queue_ms", "client queue", Standard, Always, |s| &s.client_queue_ms),
            // Only where the client saw the kernel's receive times.
            Dist::ClientReadLag => {
                spec("client_read_lag_ms", "read lag/req", Standard, Counted, |s| &s.client_read_lag_ms)
            }
            // Without failures they are TTFT and E2E again.
            Dist::ErrorAdjustedTtft => {
                spec("error_adjusted.ttft_ms", "TTFT (errors as ∞)", Full, WithFailures, |s| {
                    &s.error_adjusted.ttft_ms
                })
            }
            Dist::ErrorAdjustedE2e => {
                spec("error_adjusted.e2e_ms", "E2E (errors as ∞)", Full, WithFailures, |s| &s.error_adjusted.e2e_ms)
            }
        }
    }

    /// The path of the distribution in `summary`.
    pub fn key(self) -> &'static str {
        self.spec().key
    }

    /// A short name for tables.
    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// The detail level at which tables show it ([`crate::table`]).
    pub fn detail(self) -> Detail {
        self.spec().detail
    }

    /// Whether the run `s` summarises has this distribution at all: tables
    /// leave out a row it does not have (CSV keeps its columns).
    pub fn present(self, s: &Summary) -> bool {
        match self.spec().presence {
            // A run without output (embeddings, rerank) has no TTFT or TPOT:
            // their rows are absent rather than empty.
            Presence::Always => !(no_output(s) && self.of(s).count == 0),
            Presence::Counted => self.of(s).count > 0,
            Presence::WithFailures => s.requests.failed > 0,
        }
    }

    pub fn of(self, s: &Summary) -> &Distribution {
        (self.spec().of)(s)
    }
}

/// Whether `r`'s verdict held the limits' attainment to its target beside
/// percentile objectives, where goodput's share counts every threshold
/// ([`goodput_core::SloReport::attains_by_limits`]): then the two shares
/// are shown apart.
pub fn judged_by_limits(r: &RunResult) -> bool {
    r.slo.as_ref().is_some_and(|s| s.attains_by_limits())
}

/// The run completed requests and none brought output: an embeddings or
/// rerank run (`--api embeddings`, `rerank`), answered whole with input
/// tokens only. Its output-side figures (TTFT, TPOT, output rates) are
/// absent from tables and lines, not shown as zeros.
pub fn no_output(s: &Summary) -> bool {
    s.no_output()
}

/// What [`Dist::spec`] says of a distribution.
struct Spec {
    key: &'static str,
    label: &'static str,
    detail: Detail,
    presence: Presence,
    of: fn(&Summary) -> &Distribution,
}

/// When a run has a distribution.
#[derive(Clone, Copy)]
enum Presence {
    Always,
    /// When it holds a sample.
    Counted,
    /// When a request failed.
    WithFailures,
}

/// A statistic of a distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stat {
    Count,
    Mean,
    Std,
    Min,
    Max,
    /// A percentile, 0..=100; present only when the run was analysed with it.
    P(f64),
}

impl Stat {
    /// Its name in a metric path: `count`, `p99_9`.
    pub fn key(self) -> String {
        match self {
            Stat::Count => "count".into(),
            Stat::Mean => "mean".into(),
            Stat::Std => "std".into(),
            Stat::Min => "min".into(),
            Stat::Max => "max".into(),
            Stat::P(p) => goodput_core::analysis::stats::percentile_key(p),
        }
    }

    fn parse(s: &str) -> Option<Stat> {
        Some(match s {
            "count" => Stat::Count,
            "mean" => Stat::Mean,
            "std" => Stat::Std,
            "min" => Stat::Min,
            "max" => Stat::Max,
            _ => {
                let p: f64 = s.strip_prefix('p')?.replace('_', ".").parse().ok()?;
                if !(0.0..=100.0).contains(&p) {
                    return None;
                }
                Stat::P(p)
            }
        })
    }

    /// Its value in `d`; a count as a number.
    pub fn of(self, d: &Distribution) -> Option<f64> {
        match self {
            Stat::Count => Some(d.count as f64),
            Stat::Mean => d.mean,
            Stat::Std => d.std,
            Stat::Min => d.min,
            Stat::Max => d.max,
            Stat::P(p) => d.p(p),
        }
    }
}

/// What a metric's numbers are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Ms,
    TokensPerS,
    RequestsPerS,
    /// A fraction 0..=1, shown as a percentage.
    Ratio,
    Usd,
    Count,
    Plain,
    /// Joules (per token): three significant digits.
    Joules,
}

impl Unit {
    /// Its name as the JSON document writes it (`ratio`, `ms`): a CSV's
    /// unit column, whose values are as the JSON's (a ratio a fraction, not
    /// a percentage; `%` had read 0.47 as 0.47%).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::TokensPerS => "tokens_per_s",
            Unit::RequestsPerS => "requests_per_s",
            Unit::Ratio => "ratio",
            Unit::Usd => "usd",
            Unit::Count => "count",
            Unit::Plain => "plain",
            Unit::Joules => "joules",
        }
    }

    /// The suffix shown after a value or in a header.
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::Ms => "ms",
            Unit::TokensPerS => "tok/s",
            Unit::RequestsPerS => "req/s",
            Unit::Ratio => "%",
            Unit::Usd => "$",
            Unit::Count | Unit::Plain => "",
            Unit::Joules => "J",
        }
    }
}

/// Which way a change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
    Neither,
}

/// One number of a run, by path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    Dist(Dist, Stat),
    Scalar(Scalar),
}

impl Metric {
    /// The canonical path, as `FromStr` reads it back.
    pub fn path(&self) -> String {
        match self {
            Metric::Dist(d, s) => format!("{}.{}", d.key(), s.key()),
            Metric::Scalar(s) => s.key().to_string(),
        }
    }

    /// A short name for tables, unit included: `TTFT p95 (ms)`, `output tok/s`.
    pub fn label(&self) -> String {
        match self {
            Metric::Dist(d, Stat::Count) => format!("{} count", d.label()),
            Metric::Dist(d, s) => format!("{} {} (ms)", d.label(), s.key().replace('_', ".")),
            Metric::Scalar(s) => s.label().to_string(),
        }
    }

    /// The value in `r`; `None` when the run does not carry it (no SLO, no
    /// price, a percentile it was not analysed with, no successful request).
    pub fn value(&self, r: &RunResult) -> Option<f64> {
        match self {
            Metric::Dist(d, s) => s.of(d.of(&r.summary)),
            Metric::Scalar(s) => s.of(r),
        }
    }

    pub fn unit(&self) -> Unit {
        match self {
            Metric::Dist(_, Stat::Count) => Unit::Count,
            Metric::Dist(..) => Unit::Ms,
            Metric::Scalar(s) => s.unit(),
        }
    }

    pub fn better(&self) -> Better {
        match self {
            Metric::Dist(_, Stat::Count) => Better::Neither,
            Metric::Dist(..) => Better::Lower,
            Metric::Scalar(s) => s.better(),
        }
    }

    /// Whether the figure counts requests as good by the run's SLO
    /// (goodput, the attainment, useful work, the cost per good token): a
    /// run judged by another SLO has another figure, not a better or a
    /// worse one.
    pub fn judged_by_slo(&self) -> bool {
        matches!(
            self,
            Metric::Scalar(
                Scalar::GoodputRequestsPerS
                    | Scalar::GoodputOutputTokensPerS
                    | Scalar::SloAttainment
                    | Scalar::SloLimitsAttainment
                    | Scalar::UsefulWork
                    | Scalar::UsdPerMillionGoodOutputTokens
            )
        )
    }

    /// Whether a table of `runs` shows the figure: the limits' attainment
    /// only where some run's verdict counted the limits alone beside
    /// percentile objectives ([`judged_by_limits`]); elsewhere it is
    /// goodput's share again (limits alone) or none. Every other figure
    /// where some run has it.
    pub fn shown_for<'a>(&self, runs: impl IntoIterator<Item = &'a RunResult>) -> bool {
        let mut runs = runs.into_iter();
        match self {
            Metric::Scalar(Scalar::SloLimitsAttainment) => runs.any(judged_by_limits),
            _ => runs.any(|r| self.value(r).is_some()),
        }
    }

    /// The figure's name beside `runs`: where a run's verdict counted its
    /// limits alone beside percentile objectives ([`judged_by_limits`]),
    /// goodput's share is named as the reports name it beside such a
    /// verdict (`met every threshold`: [`goodput_core::SloReport::goodput_share_label`]),
    /// and the attainment is the limits' row; else [`Metric::label`].
    pub fn label_beside<'a>(&self, runs: impl IntoIterator<Item = &'a RunResult>) -> String {
        let by_limits = || runs.into_iter().find_map(|r| r.slo.as_ref().filter(|s| s.attains_by_limits()));
        match self {
            Metric::Scalar(Scalar::SloAttainment) => {
                by_limits().map_or_else(|| self.label(), |s| s.goodput_share_label().to_string())
            }
            _ => self.label(),
        }
    }

    /// The headline metrics `compare` shows for every run.
    pub fn main() -> Vec<Metric> {
        use Dist::*;
        let d = |d, p| Metric::Dist(d, Stat::P(p));
        vec![
            d(Ttft, 50.0),
            d(Ttft, 95.0),
            d(Ttft, 99.0),
            d(Tpot, 50.0),
            d(Tpot, 95.0),
            d(Itl, 50.0),
            d(Itl, 99.0),
            d(E2e, 50.0),
            d(E2e, 99.0),
            Metric::Scalar(Scalar::OutputTokensPerS),
            Metric::Scalar(Scalar::RequestsPerS),
            Metric::Scalar(Scalar::GoodputRequestsPerS),
            Metric::Scalar(Scalar::GoodputOutputTokensPerS),
            // The share of requests that met the SLO: beside goodput, what a
            // run under an SLO is judged by. Beside objectives the verdict
            // holds the limits' share to its target, and goodput's counts
            // every threshold: both, then ([`Metric::shown_for`]).
            Metric::Scalar(Scalar::SloLimitsAttainment),
            Metric::Scalar(Scalar::SloAttainment),
            Metric::Scalar(Scalar::ErrorRate),
            Metric::Scalar(Scalar::UsdPerMillionOutputTokens),
            // Only for runs with no output (embeddings, rerank), or energy.
            Metric::Scalar(Scalar::UsdPerMillionInputTokens),
            Metric::Scalar(Scalar::JoulesPerOutputToken),
            Metric::Scalar(Scalar::OutputTokensPerSPerMw),
            // Only for runs with sessions.
            Metric::Scalar(Scalar::SessionsPerS),
            Metric::Scalar(Scalar::UsdPerSession),
            // Only for runs with scores.
            Metric::Scalar(Scalar::QualityExact),
            Metric::Scalar(Scalar::QualityNumber),
            Metric::Scalar(Scalar::QualityRougeL),
            Metric::Scalar(Scalar::QualityChrf),
            Metric::Scalar(Scalar::QualityBleu),
            Metric::Scalar(Scalar::QualityChrfCorpus),
            Metric::Scalar(Scalar::QualityIdentical),
        ]
    }

    /// Every path `FromStr` accepts, for error messages.
    pub fn valid_paths() -> String {
        let dists: Vec<&str> = Dist::ALL.iter().map(|d| d.key()).collect();
        let scalars: Vec<String> = Scalar::ALL
            .iter()
            .map(|s| match s.aliases() {
                [] => s.key().to_string(),
                a => format!("{} (or {})", s.key(), a.join(", ")),
            })
            .collect();
        format!(
            "<distribution>.<statistic> with distribution one of {} and statistic one of count, mean, std, min, max \
             or a percentile the run was analysed with (p50, p90, p95, p99, p99_9…); or one of {}",
            dists.join(", "),
            scalars.join(", ")
        )
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.path())
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.path())
    }
}

/// A metric is written as its path (`ttft_ms.p95`, `output_tokens_per_s`).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Metric {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Metric".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "The metric's path in a run document: `<distribution>.<statistic>` under `summary` \
                (`ttft_ms.p95`), or a scalar's name (`output_tokens_per_s`).",
            "type": "string",
        })
    }
}

/// An unknown metric path, with the valid ones.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown metric '{path}'{hint}{} Valid metrics: {valid}", if .hint.is_empty() { "." } else { "" })]
pub struct UnknownMetric {
    pub path: String,
    /// A nearby valid path, when one is obvious (`: did you mean ttft_ms.p95?`).
    pub hint: String,
    pub valid: String,
}

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(s: &str) -> Result<Self, UnknownMetric> {
        let path = s.trim();
        let bare = path.strip_prefix("summary.").unwrap_or(path);
        if let Some(m) = parse_exact(bare) {
            return Ok(m);
        }
        Err(UnknownMetric { path: path.to_string(), hint: hint(bare), valid: Metric::valid_paths() })
    }
}

fn parse_exact(path: &str) -> Option<Metric> {
    for s in Scalar::ALL {
        if path == s.key() || s.aliases().contains(&path) {
            return Some(Metric::Scalar(s));
        }
    }
    // Longest key first, so `error_adjusted.ttft_ms.p99` is not read as
    // something under a shorter key.
    let mut dists = Dist::ALL;
    dists.sort_by_key(|d| std::cmp::Reverse(d.key().len()));
    for d in dists {
        if let Some(stat) = path.strip_prefix(d.key()).and_then(|r| r.strip_prefix('.')) {
            return Stat::parse(stat).map(|s| Metric::Dist(d, s));
        }
    }
    None
}

fn hint(path: &str) -> String {
    let mut tries = Vec::new();
    if Dist::ALL.iter().any(|d| d.key() == path) {
        tries.push(format!("{path}.p95"));
    }
    if let Some((head, tail)) = path.split_once('.') {
        tries.push(format!("{head}_ms.{tail}"));
        tries.push(format!("{}.{tail}", head.to_lowercase()));
    } else {
        tries.push(format!("{path}_ms.p95"));
    }
    // A figure's own name under the wrong part of the document, or none
    // (`cost.usd_per_request` as `usd_per_request`, `throughput.goodput`).
    let leaf = path.rsplit('.').next().unwrap_or(path);
    tries.extend(Scalar::ALL.iter().filter(|s| s.key().rsplit('.').next() == Some(leaf)).map(|s| s.key().to_string()));
    if let Some(t) = tries.into_iter().find(|t| parse_exact(t).is_some()) {
        return format!(": did you mean {t}?");
    }
    // A misspelling: the nearest scalar name, two edits away at most.
    let names = Scalar::ALL.iter().flat_map(|s| std::iter::once(s.key()).chain(s.aliases().iter().copied()));
    names
        .map(|n| (edits(path, n), n))
        .filter(|&(d, _)| d <= 2)
        .min_by_key(|&(d, _)| d)
        .map(|(_, n)| format!(": did you mean {n}?"))
        .unwrap_or_default()
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip() {
        let mut all: Vec<Metric> = Scalar::ALL.iter().map(|&s| Metric::Scalar(s)).collect();
        for d in Dist::ALL {
            for s in [Stat::Count, Stat::Mean, Stat::Std, Stat::Min, Stat::Max, Stat::P(50.0), Stat::P(99.9)] {
                all.push(Metric::Dist(d, s));
            }
        }
        for m in all {
            assert_eq!(m.path().parse::<Metric>(), Ok(m), "{m}");
        }
    }

    #[test]
    fn aliases_and_spellings() {
        let cases = [
            ("output_tokens_per_s", "throughput.output_tokens_per_s"),
            ("goodput", "goodput.requests_per_s"),
            ("ttft_ms.p99.9", "ttft_ms.p99_9"),
            ("summary.ttft_ms.p95", "ttft_ms.p95"),
            ("error_adjusted.e2e_ms.p99", "error_adjusted.e2e_ms.p99"),
            (" e2e_ms.max ", "e2e_ms.max"),
            // The cost figures by their columns in summary.csv.
            ("usd_per_million_output_tokens", "cost.usd_per_million_output_tokens"),
            ("usd_per_request", "cost.usd_per_request"),
            ("usd_per_million_good_output_tokens", "cost.usd_per_million_good_output_tokens"),
            ("goodput_output_tokens_per_s", "goodput.output_tokens_per_s"),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<Metric>().unwrap().path(), want, "{input}");
        }
    }

    #[test]
    fn unknown_paths_list_the_valid_ones_and_hint() {
        for (bad, hint) in [
            ("ttft.p95", "did you mean ttft_ms.p95?"),
            ("ttft_ms", "did you mean ttft_ms.p95?"),
            ("TTFT_ms.p95", "did you mean ttft_ms.p95?"),
            ("ttft_ms.p101", ""),
            ("latency", ""),
            ("throughput.usd_per_request", "did you mean cost.usd_per_request?"),
            ("usd_per_million_output_token", "did you mean usd_per_million_output_tokens?"),
            ("goodput.slo_atainment", "did you mean goodput.slo_attainment?"),
        ] {
            let e = bad.parse::<Metric>().unwrap_err();
            let text = e.to_string();
            assert!(text.contains(&format!("unknown metric '{bad}'")), "{text}");
            assert!(!text.contains("?. ") && (text.contains("? Valid") || text.contains("'. Valid")), "{text}");
            assert!(text.contains(hint), "{bad}: {text}");
            assert!(text.contains("tpot_ms") && text.contains("output_tokens_per_s") && text.contains("error_rate"));
        }
    }
}
