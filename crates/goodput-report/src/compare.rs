//! Runs side by side: the main metrics of each, their change against the
//! first run (the baseline), and `--fail-if` rules that turn a regression
//! into a failing exit for CI. Pure functions of the result documents.

use crate::escape;
use crate::format;
use crate::metric::{Better, Metric, Unit, UnknownMetric};
use goodput_core::RunResult;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};
use std::str::FromStr;

pub mod rank;
pub mod significance;
pub use significance::{Call, Significance};

/// One regression rule, e.g. `ttft_ms.p95>+10%`: fails when the metric of a
/// run moved past the threshold against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// The rule as written (trimmed).
    pub text: String,
    pub metric: Metric,
    pub op: Op,
    pub threshold: Threshold,
    /// Written with a trailing `!` (`ttft_ms.p95>+10%!`): the rule fails
    /// only on a change past the threshold that its test calls real, passes
    /// one within the noise or short of the threshold, and is unjudged where
    /// a change past it cannot be tested (too few requests).
    pub significant: bool,
}

/// `>`: fails when the change is above the threshold; `<`: below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Gt,
    Lt,
}

/// A signed threshold on the change from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Threshold {
    /// (run − baseline) / |baseline|, as a fraction: `+10%` is 0.1.
    Relative(f64),
    /// run − baseline, in the metric's own unit (ms for latencies, a
    /// fraction for ratios).
    Absolute(f64),
}

/// A `--fail-if` specification that cannot be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RuleError {
    #[error("--fail-if rule '{rule}': {source}")]
    UnknownMetric { rule: String, source: UnknownMetric },
    #[error("--fail-if rule '{rule}': needs > or <: write e.g. ttft_ms.p95>+10% or output_tokens_per_s<-5%")]
    NoOperator { rule: String },
    #[error("--fail-if rule '{rule}': {reason}")]
    Threshold { rule: String, reason: ThresholdError },
    #[error("--fail-if rule '{spec}': no rule given: write e.g. ttft_ms.p95>+10%,output_tokens_per_s<-5%")]
    NoRule { spec: String },
}

/// A rule's threshold (after its `>` or `<`) that cannot be read; `rhs`
/// is the threshold as written.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ThresholdError {
    #[error("use > or < alone (a change is never exactly a threshold)")]
    Equals,
    #[error(
        "'{rhs}' needs an explicit sign: '>+10%' fails on a rise of more than 10%, '<-5%' on a drop of more than 5%"
    )]
    NoSign { rhs: String },
    #[error("'{rhs}' is not a number with an optional unit")]
    NotANumber { rhs: String },
    #[error("'{rhs}' is not a finite threshold")]
    NotFinite { rhs: String },
    /// A bare number past ±1 on a ratio metric: read as a fraction, it is a
    /// change no ratio can make, so the rule could never fire.
    #[error(
        "'{rhs}' on a ratio (a fraction from 0 to 1) is {pp:+} percentage points, a change it can never make: write \
         '{rhs}pp' for percentage points or '{rhs}%' for a relative change"
    )]
    RatioOutOfRange { rhs: String, pp: f64 },
    /// A unit the metric is not in: `metric_unit` names the metric's, `units` lists those accepted.
    #[error("'{rhs}': the metric is in {metric_unit}; write the threshold in {units}")]
    WrongUnit { rhs: String, metric_unit: &'static str, units: &'static str },
}

impl FromStr for Rule {
    type Err = RuleError;

    fn from_str(s: &str) -> Result<Rule, RuleError> {
        let text = s.trim().to_string();
        let (body, significant) = match text.strip_suffix('!') {
            Some(b) => (b.trim_end(), true),
            None => (text.as_str(), false),
        };
        let at = body.find(['>', '<']).ok_or_else(|| RuleError::NoOperator { rule: text.clone() })?;
        let op = if body.as_bytes()[at] == b'>' { Op::Gt } else { Op::Lt };
        let metric: Metric =
            body[..at].parse().map_err(|source| RuleError::UnknownMetric { rule: text.clone(), source })?;
        let rhs = body[at + 1..].trim();
        let threshold = parse_threshold(rhs, metric.unit())
            .map_err(|reason| RuleError::Threshold { rule: text.clone(), reason })?;
        Ok(Rule { text: text.clone(), metric, op, threshold, significant })
    }
}

/// Reads a comma-separated list of rules.
///
/// ```
/// use goodput_report::compare::{parse_rules, Op, Threshold};
/// let rules = parse_rules("ttft_ms.p95>+10%, output_tokens_per_s<-5%, e2e_ms.p99>+200ms").unwrap();
/// assert_eq!(rules[0].threshold, Threshold::Relative(0.1));
/// assert_eq!(rules[1].op, Op::Lt);
/// assert_eq!(rules[2].threshold, Threshold::Absolute(200.0));
/// ```
pub fn parse_rules(spec: &str) -> Result<Vec<Rule>, RuleError> {
    let rules: Vec<Rule> =
        spec.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::parse).collect::<Result<_, _>>()?;
    if rules.is_empty() {
        return Err(RuleError::NoRule { spec: spec.to_string() });
    }
    Ok(rules)
}

fn parse_threshold(rhs: &str, unit: Unit) -> Result<Threshold, ThresholdError> {
    let sign = match rhs.chars().next() {
        Some('+') => 1.0,
        Some('-') => -1.0,
        Some('=') => return Err(ThresholdError::Equals),
        _ => return Err(ThresholdError::NoSign { rhs: rhs.to_string() }),
    };
    let body = rhs[1..].trim();
    let split = body.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E')).unwrap_or(body.len());
    let (num, suffix) = (body[..split].trim(), body[split..].trim());
    let v: f64 = num.parse().map_err(|_| ThresholdError::NotANumber { rhs: rhs.to_string() })?;
    if !v.is_finite() {
        return Err(ThresholdError::NotFinite { rhs: rhs.to_string() });
    }
    let v = sign * v;
    let units = units_of(unit);
    let wrong = || ThresholdError::WrongUnit { rhs: rhs.to_string(), metric_unit: unit_name(unit), units };
    Ok(match (suffix, unit) {
        ("%", _) => Threshold::Relative(v / 100.0),
        ("", Unit::Ratio) if v.abs() > 1.0 => {
            return Err(ThresholdError::RatioOutOfRange { rhs: rhs.to_string(), pp: v * 100.0 })
        }
        ("", _) => Threshold::Absolute(v),
        ("ms", Unit::Ms) => Threshold::Absolute(v),
        ("s", Unit::Ms) => Threshold::Absolute(v * 1e3),
        ("us" | "µs", Unit::Ms) => Threshold::Absolute(v / 1e3),
        ("tok/s", Unit::TokensPerS) => Threshold::Absolute(v),
        ("req/s", Unit::RequestsPerS) => Threshold::Absolute(v),
        ("pp", Unit::Ratio) => Threshold::Absolute(v / 100.0),
        ("$", Unit::Usd) => Threshold::Absolute(v),
        ("J", Unit::Joules) => Threshold::Absolute(v),
        _ => return Err(wrong()),
    })
}

/// The ways a threshold on a metric in `unit` may be written.
fn units_of(unit: Unit) -> &'static str {
    match unit {
        Unit::Ms => "%, ms, s or us",
        Unit::TokensPerS => "% or tok/s",
        Unit::RequestsPerS => "% or req/s",
        Unit::Ratio => "% (relative) or pp (percentage points)",
        Unit::Usd => "% or $",
        Unit::Count | Unit::Plain => "% or a bare number",
        Unit::Joules => "% or J",
    }
}

/// The units of an amount (not a relative change) on a metric in `unit`.
fn amount_units(unit: Unit) -> &'static str {
    match unit {
        Unit::Ms => "ms, s or us",
        Unit::TokensPerS => "tok/s",
        Unit::RequestsPerS => "req/s",
        Unit::Ratio => "pp",
        Unit::Usd => "$",
        Unit::Count | Unit::Plain => "a bare number",
        Unit::Joules => "J",
    }
}

fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Ms => "milliseconds",
        Unit::TokensPerS => "tokens per second",
        Unit::RequestsPerS => "requests per second",
        Unit::Ratio => "a fraction",
        Unit::Usd => "US dollars",
        Unit::Count => "a count",
        Unit::Plain => "a plain number",
        Unit::Joules => "joules",
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Whether a rule held for one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Pass,
    Fail,
    /// A value was missing (no SLO in one run, a percentile it was not
    /// analysed with): CI must not read that as a pass.
    Unjudged,
}

/// One rule judged on one run against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RuleVerdict {
    pub rule: String,
    /// Index of the run in the comparison (≥ 1; 0 is the baseline).
    pub run: usize,
    pub baseline: Option<f64>,
    pub value: Option<f64>,
    /// The change the rule looks at: a fraction for relative thresholds, an
    /// amount in the metric's unit for absolute ones.
    pub change: Option<f64>,
    pub verdict: Verdict,
    /// Why, in words: `+14.2% > +10%`, or what was missing.
    pub reason: String,
}

/// One metric across the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Row {
    pub metric: Metric,
    pub label: String,
    pub unit: Unit,
    pub better: Better,
    pub values: Vec<Option<f64>>,
    /// Relative change of each run against the first: `None` for the first
    /// and where either value is missing; ±∞ from a zero baseline.
    pub changes: Vec<Option<f64>>,
    /// Whether each run's change is larger than the two runs' intervals
    /// allow, by the test named (`None` for the baseline and for a figure
    /// without intervals: ITL, counts, cost).
    #[serde(default)]
    pub significance: Vec<Option<Significance>>,
    /// The runs (by index, ≥ 1) judged by another SLO than the baseline's,
    /// where the figure counts requests by the SLO (goodput, the
    /// attainment): their change is left out (`None`), as it measures the
    /// two SLOs, not the two runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_slo: Vec<usize>,
    /// On a figure given in per cent (`unit` `ratio`: the attainment, the
    /// error rate), each run's change against the baseline in percentage
    /// points, as the tables show it (`+16.67 pp`; from 0% a relative
    /// change is `+∞%`): `None` where `changes` is. Empty on other figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changes_pp: Vec<Option<f64>>,
}

impl Row {
    /// Run `i`'s change against the baseline as shown: a rate given in
    /// per cent (an error rate, the attainment) in percentage points
    /// (`+16.67 pp`: from 0% it had been `+∞%`), any other figure relative.
    pub fn change_text(&self, i: usize) -> String {
        if self.other_slo.contains(&i) {
            return OTHER_SLO.into();
        }
        match self.changes_pp.get(i).copied().flatten() {
            Some(pp) => format!("{pp:+.2} pp"),
            None => format::change(self.changes.get(i).copied().flatten()),
        }
    }
}

/// One run's SLO and whether the run met it, as its document says.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct RunSlo {
    /// The SLO the run was judged by, as written; `null` where it was
    /// judged by none (it then has no goodput, attainment or verdict).
    pub spec: Option<String>,
    /// Whether the run met it: every objective met and the limits'
    /// attainment reached; `null` where it has no SLO.
    pub pass: Option<bool>,
    /// What fell short, in words (each objective missed, the attainment
    /// short of its target); empty when it passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub misses: Vec<String>,
    /// `true` when `compare --slo` judged the run again from its records,
    /// by `spec`, rather than by the SLO it was saved with.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub judged_again: bool,
    /// With `judged_again`: the SLO the run was saved with, as written;
    /// absent where it was saved without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saved_spec: Option<String>,
}

impl RunSlo {
    fn of(r: &RunResult) -> RunSlo {
        let (spec, pass, misses) = match &r.slo {
            Some(s) => (Some(s.spec.clone()), Some(s.pass), s.misses()),
            None => (None, None, Vec::new()),
        };
        RunSlo { spec, pass, misses, judged_again: false, saved_spec: None }
    }

    /// The verdict as the tables show it: `pass`, `FAIL`, or `-` without an SLO.
    pub fn verdict_text(&self) -> &'static str {
        match self.pass {
            Some(true) => "pass",
            Some(false) => "FAIL",
            None => "-",
        }
    }
}

/// A setting that differs between the runs: its path in the result
/// document (`config.load.concurrency`, `target.url`, `tool.version`) and its
/// value in each run, `-` where a run has none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Difference {
    pub path: String,
    pub values: Vec<String>,
}

/// Runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Comparison {
    /// `goodput/v1`: a comparison is a result document of its own.
    #[cfg_attr(feature = "schema", schemars(extend("const" = goodput_core::SCHEMA)))]
    pub schema: String,
    /// `compare`, which tells it apart from a run or a sweep.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "compare")))]
    pub kind: String,
    /// A name per run (the file it came from), baseline first.
    pub labels: Vec<String>,
    pub rows: Vec<Row>,
    pub verdicts: Vec<RuleVerdict>,
    /// What the runs were asked to do differently: every setting of
    /// `config`, `target` and the tool's version that is not the same in all.
    pub differences: Vec<Difference>,
    /// Said when the runs are not alike: a measured run beside a simulated
    /// one (an estimate), whose differences are the model's error rather
    /// than improvements or regressions, and are not marked as either.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Each later run's answers against the baseline's on the same prompts,
    /// where both runs' records are at hand (paired by prompt hash).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<goodput_core::quality::AnswerChange>,
    /// Each run's SLO and its verdict, in the order of `labels`; empty
    /// when no run was judged by an SLO.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slo: Vec<RunSlo>,
}

impl Comparison {
    /// True when every rule held on every run: none failed, none was unjudged.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.verdict == Verdict::Pass)
    }

    /// The verdicts that make `passed` false.
    pub fn failures(&self) -> impl Iterator<Item = &RuleVerdict> {
        self.verdicts.iter().filter(|v| v.verdict != Verdict::Pass)
    }
}

/// A change left out because the run was judged by another SLO than the
/// baseline's ([`Row::other_slo`]).
pub const OTHER_SLO: &str = "other SLO";

/// An SLO's terms as written, blanks taken out and the attainment target
/// left out, sorted: the way two SLOs are told apart where either does
/// not parse (a document of an older version).
fn written_terms(spec: &str) -> Vec<String> {
    let mut terms: Vec<String> = spec
        .split(',')
        .map(|t| t.split_whitespace().collect::<String>())
        .filter(|t| !t.is_empty() && !t.starts_with("attainment"))
        .collect();
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// An SLO's terms by what they mean, the attainment target left out,
/// sorted: each latency limit in nanoseconds, so `ttft<=100ms` and
/// `ttft<=0.1s`, or `ttft:p99<=1s` and `ttft:p99 <= 1000ms`, read alike
/// (they had read as other SLOs, and left goodput unjudged). `None` where
/// the spec does not parse.
fn meant_terms(spec: &str) -> Option<Vec<String>> {
    let slo: goodput_core::Slo = spec.parse().ok()?;
    let mut terms: Vec<String> = slo
        .limits
        .iter()
        .map(|l| format!("limit {}<={}ns", l.metric.as_str(), l.max.as_nanos()))
        .chain(
            slo.objectives
                .iter()
                .map(|o| format!("objective {}:p{}<={}ns", o.metric.as_str(), o.percentile, o.max.as_nanos())),
        )
        .chain(slo.quality_limits.iter().map(|l| format!("quality limit {l}")))
        .chain(slo.quality_objectives.iter().map(|o| format!("quality objective {o}")))
        .collect();
    terms.sort_unstable();
    terms.dedup();
    Some(terms)
}

/// Whether two SLOs count requests alike: the same terms by their meaning
/// (each latency limit in nanoseconds) where both parse, else as written.
/// Goodput and the share attained count requests by the limits alone, so
/// two SLOs whose terms come in another order, or that ask another share of
/// them, count alike.
pub fn same_slo(a: &str, b: &str) -> bool {
    match (meant_terms(a), meant_terms(b)) {
        (Some(a), Some(b)) => a == b,
        _ => written_terms(a) == written_terms(b),
    }
}

/// The runs (by index, ≥ 1) that carry an SLO other than the baseline's
/// (the baseline carrying one too): their goodput and attainment are
/// counted by other limits, and no change in them is the run's.
fn other_slo_runs(runs: &[(&str, &RunResult)]) -> Vec<usize> {
    let Some(base) = runs.first().and_then(|(_, r)| r.slo.as_ref()) else { return Vec::new() };
    (1..runs.len()).filter(|&i| runs[i].1.slo.as_ref().is_some_and(|s| !same_slo(&s.spec, &base.spec))).collect()
}

/// The note for runs a stop cut short (`interrupted`): their figures are
/// of the requests done before it (compare had said nothing of it).
fn interrupted_note(runs: &[(&str, &RunResult)]) -> Option<String> {
    let stopped: Vec<&str> = runs.iter().filter(|(_, r)| r.interrupted).map(|(l, _)| *l).collect();
    (!stopped.is_empty()).then(|| {
        format!(
            "{} {} interrupted: {} the requests done before the stop, over a shorter window than asked for",
            stopped.join(" and "),
            if stopped.len() == 1 { "was" } else { "were" },
            if stopped.len() == 1 { "it holds" } else { "each holds" }
        )
    })
}

/// How to judge every run by one SLO, said where they were not: by
/// `compare --slo`, or `report --slo` run by run, from each run's records.
pub const ONE_SLO_HINT: &str = "judge every run by one SLO: goodput compare RUN.json… --slo SPEC, which judges each \
     run again from its records (RUN.jsonl beside it, --records FILE for each run in order, or a document saved with \
     --include-requests), or goodput report RUN.json --slo SPEC -o RUN-judged.json for each, and compare those";

/// The note for runs not judged by one SLO: some by different SLOs, or
/// some by none beside others by one. Which run by which, what does not
/// compare, and how to judge them alike. `None` where every run was judged
/// by one SLO (by meaning, [`same_slo`]), or none by any.
fn slo_note(runs: &[(&str, &RunResult)]) -> Option<String> {
    let specs: Vec<Option<&str>> = runs.iter().map(|(_, r)| r.slo.as_ref().map(|s| s.spec.as_str())).collect();
    let judged: Vec<&str> = specs.iter().copied().flatten().collect();
    let first = judged.first()?;
    let differ = judged.iter().any(|s| !same_slo(s, first));
    let none: Vec<&str> = runs.iter().zip(&specs).filter(|(_, s)| s.is_none()).map(|((l, _), _)| *l).collect();
    if !differ && none.is_empty() {
        return None;
    }
    let each: Vec<String> = runs
        .iter()
        .zip(&specs)
        .map(|((l, _), s)| match s {
            Some(s) => format!("{l} by '{s}'"),
            None => format!("{l} by none"),
        })
        .collect();
    let head = if differ { "the runs were judged by different SLOs" } else { "not every run was judged by an SLO" };
    let without = match none.len() {
        0 => String::new(),
        1 => format!("; {} has none", none[0]),
        _ => format!("; {} have none", listed(&none.iter().map(|l| l.to_string()).collect::<Vec<_>>())),
    };
    Some(format!(
        "{head} ({}): goodput, the attainment, useful work, the cost per good token and the SLO verdict count \
         requests by each run's own SLO, so they do not compare across these runs: a change in them is left out \
         (shown as '{OTHER_SLO}' where the SLOs differ), and a --fail-if rule on them is unjudged{without}; to \
         compare them, {ONE_SLO_HINT}",
        each.join(", ")
    ))
}

/// Words of the warning of a run whose prompts the server's prefix cache
/// held before it began ([`goodput_core::analysis::assemble::warm_cache_warning`]),
/// by which a saved run's warnings are read.
const WARM_RUN: &str = "held them before the run";

/// Words of the warning of `--runs` whose later runs found their prompts in
/// the server's prefix cache
/// ([`goodput_core::analysis::assemble::warm_repeats_warning`]): the runs
/// it names (`runs 2 and 3`) come before them.
const WARM_REPEATS: &str = " of --runs found the server's prefix cache holding";

/// Where `r` found its prompts in the server's prefix cache, sent there by
/// an earlier run (its warnings say so): `Some("")` for the run itself,
/// `Some(" (runs 2 and 3 of its --runs)")` for its later runs of `--runs`.
/// Those are counted only where the comparison reads the runs' means
/// (`by_means`), which take them in; else a document's figures are its
/// first run's, which the check passed. `None` where no run of it was warm.
fn warmed(r: &RunResult, by_means: bool) -> Option<String> {
    let own = r.warnings.iter().any(|w| w.contains(WARM_RUN));
    let repeats = r.warnings.iter().find_map(|w| w.split_once(WARM_REPEATS)).map(|(runs, _)| runs.trim());
    match (own, repeats.filter(|_| by_means)) {
        (true, Some(rs)) => Some(format!(" (run 1, and {rs} of its --runs)")),
        (false, Some(rs)) => Some(format!(" ({rs} of its --runs)")),
        (true, None) => Some(String::new()),
        (false, None) => None,
    }
}

/// The note for runs whose prompts the server's prefix cache held from an
/// earlier run ([`warmed`]): which, and that their latencies may be faster
/// by the cache rather than the server. Their own warnings had said so,
/// and the comparison had not.
fn warm_cache_note(runs: &[(&str, &RunResult)], by_means: bool) -> Option<String> {
    let each: Vec<String> = runs.iter().filter_map(|(l, r)| Some(format!("{l}{}", warmed(r, by_means)?))).collect();
    let their = match each.len() {
        0 => return None,
        1 => "its",
        _ => "their",
    };
    Some(format!(
        "the server's prefix cache held the prompts an earlier run had sent when {} ran (as {their} warnings say): \
         {their} TTFT and latencies are faster by the cache than fresh prompts get, so {their} latency gains may be \
         the cache's, not the server's; to compare servers, give each run prompts no earlier run sent (a --seed of \
         its own, without --same-seed)",
        listed(&each)
    ))
}

/// The note for runs whose users moved in lockstep
/// ([`crate::intervals::in_lockstep`]), where the comparison reads single
/// runs: the percentiles' tests take the requests as independent, and a
/// wave's are not. Documents of `--runs N` compared by their means are
/// tested on their runs, each one draw, and need none.
fn lockstep_note(runs: &[(&str, &RunResult)], by_means: bool) -> Option<String> {
    if by_means {
        return None;
    }
    let waved: Vec<&(&str, &RunResult)> = runs.iter().filter(|(_, r)| crate::intervals::in_lockstep(r)).collect();
    let each: Vec<String> = waved.iter().map(|(l, _)| l.to_string()).collect();
    let their = match each.len() {
        0 => return None,
        1 => "its",
        _ => "their",
    };
    // The simulated engine in virtual time repeats its waves run after run:
    // runs of it are no second draw (the note had advised them there too).
    let fix = if waved.iter().all(|(_, r)| r.engine.is_some()) {
        "start the users apart (the simulated engine repeats the same waves run after run, so documents of --runs N \
         hold no other draw)"
    } else {
        "compare documents of --runs N (each run is then one draw), or start the users apart"
    };
    Some(format!(
        "the users of {} moved in lockstep (as {their} diagnosis says): the tests of {their} percentiles take the \
         requests as independent wherever batch means did not see the waves and widen the intervals, which a \
         wave's are not, so a change marked * there may be how the waves fell, not the server; {fix}",
        listed(&each)
    ))
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String]) -> String {
    match items.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// (run − base) / |base|; ±∞ from a zero baseline, 0 when both are zero.
pub fn relative_change(base: f64, v: f64) -> f64 {
    if base == 0.0 {
        if v == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(v)
        }
    } else {
        (v - base) / base.abs()
    }
}

/// Compares `runs` (label, result), the first being the baseline: the main
/// metrics plus any a rule names, and every rule judged on every later run.
/// Goodput, cost and energy rows appear only when some run carries them;
/// the cost per million input tokens, only when some run has no output
/// (embeddings, rerank: their headline price) or a rule names it.
pub fn compare(runs: &[(&str, &RunResult)], rules: &[Rule]) -> Comparison {
    let input_price = Metric::Scalar(crate::metric::Scalar::UsdPerMillionInputTokens);
    let no_output = runs.iter().any(|(_, r)| r.summary.no_output());
    let mut metrics: Vec<Metric> = Metric::main()
        .into_iter()
        .filter(|m| m.shown_for(runs.iter().map(|(_, r)| *r)) || matches!(m, Metric::Dist(..)))
        .filter(|m| *m != input_price || no_output)
        .collect();
    for r in rules {
        if !metrics.contains(&r.metric) {
            metrics.push(r.metric);
        }
    }
    let kinds = kinds_note(runs);
    // Across a measurement and a simulation no change is better or worse.
    let neutral = kinds.is_some();
    // Documents of --runs N all: their headline figures are their runs' means.
    let by_means = runs.len() >= 2 && runs.iter().all(|(_, r)| significance::repeated(r));
    let other_slo = other_slo_runs(runs);
    let differences = differences(runs);
    // The notes that apply, in one line: other work, other SLOs, a cache
    // an earlier run warmed, then how the runs were made.
    let notes: Vec<String> = [
        workload_note(&differences),
        slo_note(runs),
        warm_cache_note(runs, by_means),
        lockstep_note(runs, by_means),
        kinds,
        sources_note(runs),
        interrupted_note(runs),
        by_means.then(|| MEANS_NOTE.to_string()),
    ]
    .into_iter()
    .flatten()
    .collect();
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let mut rows: Vec<Row> = metrics
        .into_iter()
        .map(|m| {
            let values: Vec<Option<f64>> = runs.iter().map(|(_, r)| value(&m, r, by_means)).collect();
            let base = values.first().copied().flatten();
            let other: Vec<usize> = if m.judged_by_slo() { other_slo.clone() } else { Vec::new() };
            let changes: Vec<Option<f64>> = values
                .iter()
                .enumerate()
                .map(|(i, v)| match (i, base, v) {
                    (0, ..) => None,
                    _ if other.contains(&i) => None,
                    (_, Some(b), Some(v)) => Some(relative_change(b, *v)),
                    _ => None,
                })
                .collect();
            let better = if neutral { Better::Neither } else { m.better() };
            let significance = runs
                .iter()
                .enumerate()
                .map(|(i, (_, r))| {
                    if i == 0 || other.contains(&i) {
                        None
                    } else {
                        significance::test_in(&m, runs[0].1, r, by_means)
                    }
                })
                .collect();
            // A share's change in percentage points, where its relative change is shown at all.
            let changes_pp = if m.unit() == Unit::Ratio {
                values
                    .iter()
                    .zip(&changes)
                    .map(|(v, ch)| Some((v.as_ref()? - base?) * 100.0).filter(|_| ch.is_some()))
                    .collect()
            } else {
                Vec::new()
            };
            Row {
                metric: m,
                label: m.label_beside(runs.iter().map(|(_, r)| *r)),
                unit: m.unit(),
                better,
                values,
                changes,
                significance,
                other_slo: other,
                changes_pp,
            }
        })
        .collect();
    // Each later run's figures are one family: a dozen tests at 5% each
    // would mark one of them on two runs of the same server about as often
    // as not.
    for i in 1..runs.len() {
        holm(rows.iter_mut().filter_map(|r| r.significance.get_mut(i)?.as_mut()), "figures", true);
    }
    let mut verdicts = Vec::new();
    if let Some((_, base)) = runs.first() {
        for (i, (label, run)) in runs.iter().enumerate().skip(1) {
            let sigs = holm_adjusted(rules, base, run, by_means);
            for (rule, sig) in rules.iter().zip(sigs) {
                if rule.metric.judged_by_slo() && other_slo.contains(&i) {
                    verdicts.push(other_slo_verdict(rule, i, (runs[0].0, base), (label, run), by_means));
                    continue;
                }
                let values = (value(&rule.metric, base, by_means), value(&rule.metric, run, by_means));
                let why = [not_in_file(&rule.metric, base), not_in_file(&rule.metric, run)];
                verdicts.push(judge(rule, values, i, label, runs[0].0, sig, why));
            }
        }
    }
    Comparison {
        schema: goodput_core::SCHEMA.into(),
        kind: "compare".into(),
        labels: runs.iter().map(|(l, _)| l.to_string()).collect(),
        rows,
        verdicts,
        differences,
        note,
        answers: answers(runs),
        slo: if runs.iter().any(|(_, r)| r.slo.is_some()) {
            runs.iter().map(|(_, r)| RunSlo::of(r)).collect()
        } else {
            Vec::new()
        },
    }
}

/// `rule` on run `i`, judged by another SLO than the baseline: unjudged,
/// and why, with how to judge the two alike.
fn other_slo_verdict(
    rule: &Rule,
    i: usize,
    (base_label, base): (&str, &RunResult),
    (label, run): (&str, &RunResult),
    by_means: bool,
) -> RuleVerdict {
    let spec = |r: &RunResult| r.slo.as_ref().map(|s| s.spec.clone()).unwrap_or_default();
    RuleVerdict {
        rule: rule.text.clone(),
        run: i,
        baseline: value(&rule.metric, base, by_means),
        value: value(&rule.metric, run, by_means),
        change: None,
        verdict: Verdict::Unjudged,
        reason: format!(
            "not comparable: {label} was judged by '{}', {base_label} by '{}', and {} counts requests by the SLO; \
             {ONE_SLO_HINT}",
            spec(run),
            spec(base),
            rule.metric
        ),
    }
}

/// Each later run's answers against the baseline's, where both carry records.
fn answers(runs: &[(&str, &RunResult)]) -> Vec<goodput_core::quality::AnswerChange> {
    let Some(base) = runs.first().and_then(|(_, r)| r.requests.as_deref()) else { return Vec::new() };
    runs.iter()
        .enumerate()
        .skip(1)
        .filter_map(|(i, (_, r))| goodput_core::quality::compare_answers(base, r.requests.as_deref()?, i))
        .collect()
}

/// The note for runs that other tools measured (`import`): which tool
/// measured each run, and that their figures are recomputed.
fn sources_note(runs: &[(&str, &RunResult)]) -> Option<String> {
    if !runs.iter().any(|(_, r)| r.kind == crate::read::peers::KIND) {
        return None;
    }
    let each: Vec<String> = runs
        .iter()
        .map(|(l, r)| format!("{l} by {} {}", r.tool.name, crate::read::peers::version_text(&r.tool.version)))
        .collect();
    Some(format!(
        "measured {}; every figure is recomputed from the runs' records by goodput's definitions, and '-' is one \
         a tool's file cannot give (each run's warnings say why)",
        each.join(", ")
    ))
}

/// The note for runs of different kinds: which are simulated (`estimate`)
/// and which measured (`bench`).
fn kinds_note(runs: &[(&str, &RunResult)]) -> Option<String> {
    let simulated: Vec<&str> = runs.iter().filter(|(_, r)| r.kind == "estimate").map(|(l, _)| *l).collect();
    if simulated.is_empty() || simulated.len() == runs.len() {
        return None;
    }
    Some(format!(
        "{} simulated (goodput estimate, in virtual time), the others measured: a difference between the two kinds \
         is the model's error, not an improvement or a regression, and is not marked as either",
        if simulated.len() == 1 { format!("{} is", simulated[0]) } else { format!("{} are", simulated.join(", ")) }
    ))
}

/// The note for runs that asked for different work (prompt and answer
/// lengths, a dataset, a preset, a shared prefix): their latencies and
/// throughputs differ by the work as well as by the server, which the
/// settings' list alone had left to the reader. How tokens were counted
/// (`tokenizer`) is no other work.
fn workload_note(differences: &[Difference]) -> Option<String> {
    let of_work: Vec<String> = differences
        .iter()
        .filter_map(|d| {
            let field = d.path.strip_prefix("config.workload.")?;
            (field != "tokenizer").then(|| format!("{field} {}", d.values.join(" → ")))
        })
        .collect();
    (!of_work.is_empty()).then(|| {
        format!(
            "the runs asked for different work ({}): their latencies and throughputs differ by it as well as by the \
             server, so a change is not the server's alone; compare runs of one workload to judge the server",
            of_work.join(", ")
        )
    })
}

/// The settings whose values are not the same in every run, in path order.
/// A `null` and an absent setting are the same: nothing. The runs' labels
/// head the columns already and are left out.
fn differences(runs: &[(&str, &RunResult)]) -> Vec<Difference> {
    let settings: Vec<BTreeMap<String, String>> = runs
        .iter()
        .map(|(_, r)| {
            let mut m = BTreeMap::new();
            leaves("config".into(), &serde_json::to_value(&r.config).unwrap_or_default(), &mut m);
            m.remove("config.label");
            // An import's notes are its warnings; the note above names its tool.
            m.remove("config.import.notes");
            m.remove("config.import.not_recomputed");
            leaves("target".into(), &serde_json::to_value(&r.target).unwrap_or_default(), &mut m);
            m.insert("tool.version".into(), r.tool.version.clone());
            m
        })
        .collect();
    let paths: BTreeSet<&String> = settings.iter().flat_map(|m| m.keys()).collect();
    paths
        .into_iter()
        .filter_map(|p| {
            let values: Vec<String> =
                settings.iter().map(|m| m.get(p).cloned().unwrap_or_else(|| "-".into())).collect();
            values.iter().any(|v| *v != values[0]).then(|| Difference { path: p.clone(), values })
        })
        .collect()
}

/// Every leaf of `v` under `path`: strings as they are, other values as
/// compact JSON, lists whole.
fn leaves(path: String, v: &serde_json::Value, out: &mut BTreeMap<String, String>) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(format!("{path}.{k}"), x, out);
            }
        }
        Value::Null => {}
        Value::String(s) => {
            out.insert(path, s.clone());
        }
        other => {
            out.insert(path, other.to_string());
        }
    }
}

/// The test of each rule that asks for significance (`!`) on `run`, its
/// p-value adjusted by Holm's method over all of them that made a test: a
/// gate of several `!` rules then calls a change on noise no more often
/// than one rule alone would. `None` for a rule without `!`.
fn holm_adjusted(rules: &[Rule], base: &RunResult, run: &RunResult, by_means: bool) -> Vec<Option<Significance>> {
    let mut sigs: Vec<Option<Significance>> = rules
        .iter()
        .map(|r| if r.significant { significance::test_in(&r.metric, base, run, by_means) } else { None })
        .collect();
    holm(sigs.iter_mut().flatten(), "rules", false);
    sigs
}

/// Adjusts the p-value of each test in `family` that made one by Holm's
/// method over all of them, calls each by its adjusted p, and says so in
/// its reason (`members` names what was tested: `rules`, `figures`): after
/// the test's own words where `keep`, else in their place, with the
/// unadjusted p. A family of fewer than two tests is left as it is.
fn holm<'a>(family: impl Iterator<Item = &'a mut Significance>, members: &str, keep: bool) {
    let mut tested: Vec<&mut Significance> = family.filter(|s| s.p_value.is_some()).collect();
    if tested.len() < 2 {
        return;
    }
    let ps: Vec<f64> = tested.iter().filter_map(|s| s.p_value).collect();
    let count = tested.len();
    for (s, adj) in tested.iter_mut().zip(rank::holm(&ps)) {
        let raw = s.p_value.unwrap_or(adj);
        s.p_value = Some(adj);
        s.call = if adj < s.alpha { Call::Different } else { Call::NotShown };
        let adjusted = format!(
            "Holm-adjusted over {count} {members}: p = {} {} {}",
            significance::p_text(adj),
            if adj < s.alpha { "<" } else { "≥" },
            s.alpha
        );
        s.reason = if keep {
            format!("{}; {adjusted}", s.reason)
        } else {
            format!("{adjusted} (unadjusted {})", significance::p_text(raw))
        };
    }
}

/// Why `run` holds no value of `metric`, where the reason is that it was
/// imported from a file that cannot give it (a vLLM import has no TTFB):
/// the general reasons had been given instead ("no SLO or price given").
fn not_in_file(metric: &Metric, run: &RunResult) -> Option<String> {
    let import = crate::read::peers::import_info(run)?;
    let field = match metric {
        Metric::Dist(d, _) => format!("summary.{}", d.key()),
        Metric::Scalar(_) => format!("summary.throughput.{}", metric.path()),
    };
    (!crate::read::peers::recomputed(run, &field)).then(|| {
        format!("an import of {}'s file, which cannot give {}: its warnings say why", import.tool, metric.path())
    })
}

/// `rule` judged on run `i` (`label`) against the baseline, `(b, v)` their
/// values of its metric, `sig` its test where it asks for one (`!`), `why`
/// the reason each of them lacks the metric where it is known
/// ([`not_in_file`]).
fn judge(
    rule: &Rule,
    (b, v): (Option<f64>, Option<f64>),
    i: usize,
    label: &str,
    base_label: &str,
    sig: Option<Significance>,
    why: [Option<String>; 2],
) -> RuleVerdict {
    let mut out = RuleVerdict {
        rule: rule.text.clone(),
        run: i,
        baseline: b,
        value: v,
        change: None,
        verdict: Verdict::Unjudged,
        reason: String::new(),
    };
    let (Some(b), Some(v)) = (b, v) else {
        let [why_base, why_run] = why;
        let (missing, why) = if b.is_none() { (base_label, why_base) } else { (label, why_run) };
        let why = why.unwrap_or_else(|| {
            "no SLO or price given, a percentile it was not analysed with, or no successful request".into()
        });
        out.reason = format!("{missing} has no value for {} ({why})", rule.metric);
        return out;
    };
    let (change, limit, shown) = match rule.threshold {
        Threshold::Relative(t) => {
            let c = relative_change(b, v);
            (c, t, (format::change(Some(c)), format::change(Some(t))))
        }
        Threshold::Absolute(t) => {
            let c = v - b;
            let u = rule.metric.unit();
            let f = |x: f64| match u {
                Unit::Ratio => format!("{:+.2}pp", x * 100.0),
                _ => format!("{:+} {}", round_sig(x), u.suffix()).trim_end().to_string(),
            };
            (c, t, (f(c), f(t)))
        }
    };
    let failed = match rule.op {
        Op::Gt => change > limit,
        Op::Lt => change < limit,
    };
    let (op, not) = match rule.op {
        Op::Gt => (">", "≤"),
        Op::Lt => ("<", "≥"),
    };
    out.change = Some(change);
    out.verdict = if failed { Verdict::Fail } else { Verdict::Pass };
    out.reason = format!("{} {} {}", shown.0, if failed { op } else { not }, shown.1);
    // From a baseline of 0 any change is ±∞% (or none): say so, and how to
    // write the rule as an amount instead.
    if matches!(rule.threshold, Threshold::Relative(_)) && b == 0.0 {
        let amount = match rule.metric.unit() {
            Unit::Ratio => "percentage points (e.g. +1pp)".to_string(),
            u => format!("an amount ({})", amount_units(u)),
        };
        out.reason = format!(
            "{} (the baseline's {} is 0, so a relative change is {}: write the threshold in {amount})",
            out.reason,
            rule.metric,
            if v == 0.0 { "0%" } else { "infinite" }
        );
    }
    // A change that is not past the threshold passes: the `!` asks for a
    // test only before failing (it had left a clear improvement, TTFT
    // -85 %, unjudged for want of an interval, and so failed the command).
    if rule.significant && failed {
        let Some(sig) = sig else {
            out.verdict = Verdict::Unjudged;
            out.reason = format!(
                "{}, but {} has no interval to test a change against (the ! needs a percentile of a per-request \
                 latency, a rate or the attainment)",
                out.reason, rule.metric
            );
            return out;
        };
        match sig.call {
            Call::CannotTell => {
                out.verdict = Verdict::Unjudged;
                out.reason = format!("{}; {}", out.reason, sig.reason);
            }
            Call::NotShown if failed => {
                out.verdict = Verdict::Pass;
                out.reason = format!("{}, within the noise ({}: {})", out.reason, sig.test, sig.reason);
            }
            _ => out.reason = format!("{} ({}: {})", out.reason, sig.test, sig.reason),
        }
    }
    out
}

/// Said when every document compared holds repeated runs.
pub const MEANS_NOTE: &str = "every document holds repeated runs (--runs N): each headline figure is the mean over \
     its runs, and its change is tested by Welch's t on the runs' values; a figure the runs did not keep is the \
     first run's";

/// `m` in `r`: the mean over its runs when the comparison reads means and
/// its `repeats` block keeps the figure, else the document's own value.
fn value(m: &Metric, r: &RunResult, by_means: bool) -> Option<f64> {
    let path = m.path();
    let mean = || r.repeats.as_ref()?.spread.iter().find(|s| s.figure == path).map(|s| s.mean);
    if by_means {
        if let Some(v) = mean() {
            return Some(v);
        }
    }
    m.value(r)
}

/// `*` beside a change the runs' intervals call real, `?` where they
/// cannot tell, nothing otherwise.
pub fn significance_mark(s: Option<&Significance>) -> &'static str {
    match s.map(|s| s.call) {
        Some(Call::Different) => "*",
        Some(Call::CannotTell) => "?",
        _ => "",
    }
}

/// The legend of [`significance_mark`].
pub const SIGNIFICANCE_LEGEND: &str = "* larger than the runs' intervals allow (a test per figure, Holm-adjusted over \
     the figures tested: -o names it); ? too few requests to tell";

/// Four significant digits: enough to read a threshold decision.
fn round_sig(x: f64) -> f64 {
    goodput_core::util::round_significant(x, 4)
}

/// One run's answers against the baseline's, in a line.
pub fn answers_line(a: &goodput_core::quality::AnswerChange) -> String {
    let mut parts = vec![format!("{} pairs", a.pairs), format!("{:.1}% identical", a.identical_share * 100.0)];
    for (name, c, d) in
        [("exact", &a.exact, 3), ("number", &a.number, 3), ("ROUGE-L", &a.rouge_l, 3), ("chrF", &a.chrf, 1)]
    {
        if let Some(c) = c {
            parts.push(format!("{name} {:+.d$} [{:+.d$}, {:+.d$}]", c.change, c.ci95_low, c.ci95_high));
        }
    }
    parts.join(" · ")
}

/// The verdict row's name in the tables.
pub const SLO_VERDICT: &str = "SLO verdict";

/// Each run's SLO verdict in words, for below a table: a heading, then a
/// line per run with what it missed where it failed, and the SLO it was
/// judged by where the runs were not all judged by one as written. Empty
/// where no run had an SLO. Plain text: each rendering escapes it.
pub fn slo_lines(c: &Comparison) -> Vec<String> {
    let Some(first) = c.slo.first() else { return Vec::new() };
    // One SLO by meaning, as the note reads it ([`same_slo`]): its terms
    // in another order are the same SLO.
    let one =
        first.spec.as_deref().is_some_and(|f| c.slo.iter().all(|s| s.spec.as_deref().is_some_and(|x| same_slo(x, f))));
    let mut out = vec![match (&first.spec, one) {
        (Some(spec), true) => format!("SLO verdict of each run, by '{spec}':"),
        _ => "SLO verdict of each run, by its own SLO:".to_string(),
    }];
    for (l, s) in c.labels.iter().zip(&c.slo) {
        let mut line = match (&s.spec, one) {
            (None, _) => format!("{l}: no SLO"),
            (Some(_), true) => format!("{l}: {}", s.verdict_text()),
            (Some(spec), false) => format!("{l}: {}, by '{spec}'", s.verdict_text()),
        };
        if !s.misses.is_empty() {
            line = format!("{line} ({})", s.misses.join("; "));
        }
        out.push(line);
    }
    out
}

/// Settings that differ shown in the terminal; runs of different kinds
/// (a bench and an estimate) differ in dozens.
const SHOWN_DIFFERENCES: usize = 20;

/// The comparison as a terminal table, verdicts below it.
pub fn render_terminal(c: &Comparison) -> String {
    let mut o = String::new();
    let labels: Vec<String> = c.labels.iter().map(|l| escape::terminal(l)).collect();
    let _ = writeln!(o, "baseline: {}", labels.first().map(String::as_str).unwrap_or("-"));
    let width = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0).clamp(10, 28);
    let name_w = c.rows.iter().map(|r| r.label.chars().count()).chain([SLO_VERDICT.len()]).max().unwrap_or(10);
    // Each change as shown, marks and all: the column is as wide as the
    // widest (`-33.33 pp !` had pushed the columns after it out of line).
    let changes: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|row| {
            (0..row.values.len())
                .map(|i| {
                    let sig = significance_mark(row.significance.get(i).and_then(Option::as_ref));
                    format!("{}{}{sig}", row.change_text(i), mark(row.better, row.changes[i]))
                })
                .collect()
        })
        .collect();
    let change_w = changes.iter().flat_map(|r| r.iter().skip(1)).map(|t| t.chars().count()).max().unwrap_or(0).max(9);
    let _ = write!(o, "{:<name_w$}", "metric");
    for (i, l) in labels.iter().enumerate() {
        let _ = write!(o, "  {:>width$}", truncate(l, width));
        if i > 0 {
            let _ = write!(o, "  {:>change_w$}", "change");
        }
    }
    o.push('\n');
    for (row, shown) in c.rows.iter().zip(&changes) {
        let _ = write!(o, "{:<name_w$}", row.label);
        for (i, v) in row.values.iter().enumerate() {
            let _ = write!(o, "  {:>width$}", format::value(*v, row.unit));
            if i > 0 {
                let _ = write!(o, "  {:>change_w$}", shown[i]);
            }
        }
        o.push('\n');
    }
    if !c.slo.is_empty() {
        let _ = write!(o, "{SLO_VERDICT:<name_w$}");
        for (i, s) in c.slo.iter().enumerate() {
            let _ = write!(o, "  {:>width$}", s.verdict_text());
            if i > 0 {
                let _ = write!(o, "  {:>change_w$}", "");
            }
        }
        o.truncate(o.trim_end().len());
        o.push('\n');
    }
    if c.labels.len() > 1 {
        let _ = writeln!(
            o,
            "change against the baseline: + better, ! worse (by 1% or more); unmarked: within 1%, or neither"
        );
        if c.rows.iter().any(|r| r.significance.iter().any(Option::is_some)) {
            let _ = writeln!(o, "{SIGNIFICANCE_LEGEND}");
        }
    }
    let slo = slo_lines(c);
    if let Some((head, each)) = slo.split_first() {
        let _ = writeln!(o, "\n{}", escape::terminal(head));
        // A failing run's misses in words can run long: broken at the
        // narrow width, its continuation indented under it.
        for l in each {
            o.push_str(&crate::terminal::wrap(&format!("  {}\n", escape::terminal(l)), crate::terminal::NARROW));
        }
    }
    if !c.answers.is_empty() {
        let _ = writeln!(o, "\nanswers on the same prompts as the baseline (change, 95% paired interval):");
        for a in &c.answers {
            let _ = writeln!(o, "  {}: {}", labels.get(a.run).map(String::as_str).unwrap_or("?"), answers_line(a));
        }
    }
    if let Some(n) = &c.note {
        let _ = writeln!(o, "\nnote: {}", escape::terminal(n));
    }
    if !c.differences.is_empty() {
        let _ = writeln!(o, "\nsettings that differ:");
        for d in c.differences.iter().take(SHOWN_DIFFERENCES) {
            let values: Vec<String> = d.values.iter().map(|v| escape::terminal(v)).collect();
            let _ = writeln!(o, "  {}: {}", escape::terminal(&d.path), values.join(" → "));
        }
        if let Some(more) = c.differences.len().checked_sub(SHOWN_DIFFERENCES).filter(|&m| m > 0) {
            let _ = writeln!(o, "  … and {more} more (--markdown, --html and --csv list them all)");
        }
    }
    if !c.verdicts.is_empty() {
        o.push('\n');
        for v in &c.verdicts {
            let word = match v.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "FAIL",
                Verdict::Unjudged => "UNJUDGED",
            };
            let _ = writeln!(
                o,
                "{word:<8} {} on {}: {}",
                escape::terminal(&v.rule),
                labels.get(v.run).map(String::as_str).unwrap_or("?"),
                escape::terminal(&v.reason)
            );
        }
        let failed = c.failures().count();
        let _ = writeln!(
            o,
            "{}",
            if failed == 0 {
                "every rule held".to_string()
            } else {
                format!("{failed} of {} rule checks did not pass", c.verdicts.len())
            }
        );
    }
    o
}

/// `+` when the change is an improvement, `!` when it is a regression, so a
/// table reads without knowing each metric's direction. Changes under 1%
/// are noise for this purpose.
pub(crate) fn mark(better: Better, change: Option<f64>) -> &'static str {
    match (better, change) {
        (Better::Neither, _) | (_, None) => "",
        (_, Some(c)) if c.abs() < 0.01 => "",
        (Better::Lower, Some(c)) | (Better::Higher, Some(c)) => {
            if (c < 0.0) == (better == Better::Lower) {
                " +"
            } else {
                " !"
            }
        }
    }
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let keep: String = s.chars().rev().take(n - 1).collect::<Vec<_>>().into_iter().rev().collect();
        format!("…{keep}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs that asked for other work are told so, naming it; other
    /// settings (the load, the seed, how tokens were counted) are not work.
    #[test]
    fn runs_of_other_work_are_told_so() {
        let d = |path: &str, a: &str, b: &str| Difference { path: path.into(), values: vec![a.into(), b.into()] };
        let note =
            workload_note(&[d("config.load.concurrency", "8", "16"), d("config.workload.input_tokens", "256", "512")]);
        let note = note.expect("a note for other work");
        assert!(note.starts_with("the runs asked for different work (input_tokens 256 → 512)"), "{note}");
        assert!(!note.contains("concurrency"), "{note}");
        assert_eq!(
            workload_note(&[d("config.workload.tokenizer", "-", "t.json"), d("config.load.seed", "1", "2")]),
            None
        );
    }

    #[test]
    fn thresholds_table() {
        let ok = [
            ("ttft_ms.p95>+10%", Op::Gt, Threshold::Relative(0.1)),
            ("output_tokens_per_s<-5%", Op::Lt, Threshold::Relative(-0.05)),
            ("ttft_ms.p95 > +20ms", Op::Gt, Threshold::Absolute(20.0)),
            ("e2e_ms.p99>+1.5s", Op::Gt, Threshold::Absolute(1500.0)),
            ("itl_ms.p50>+500us", Op::Gt, Threshold::Absolute(0.5)),
            ("error_rate>+1pp", Op::Gt, Threshold::Absolute(0.01)),
            ("error_rate>+0.02", Op::Gt, Threshold::Absolute(0.02)),
            ("output_tokens_per_s<-100tok/s", Op::Lt, Threshold::Absolute(-100.0)),
            ("requests_per_s<-0.5 req/s", Op::Lt, Threshold::Absolute(-0.5)),
            ("cost.usd_per_million_output_tokens>+0.1$", Op::Gt, Threshold::Absolute(0.1)),
            ("usd_per_million_output_tokens>+5%", Op::Gt, Threshold::Relative(0.05)),
            ("slo_attainment<-1", Op::Lt, Threshold::Absolute(-1.0)),
            ("slo_attainment<-5pp", Op::Lt, Threshold::Absolute(-0.05)),
        ];
        for (text, op, th) in ok {
            let r: Rule = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!((r.op, r.threshold), (op, th), "{text}");
        }
        let bad = [
            ("ttft_ms.p95", "needs > or <"),
            ("ttft_ms.p95>10%", "explicit sign"),
            ("ttft_ms.p95>=+10%", "use > or < alone"),
            ("ttft_ms.p95>+10tok/s", "write the threshold in %, ms, s or us"),
            ("output_tokens_per_s<-5ms", "tok/s"),
            ("error_rate>+1ms", "pp"),
            ("ttft_ms.p95>+ten%", "not a number"),
            ("ttft.p95>+10%", "did you mean ttft_ms.p95?"),
            // A bare number on a ratio is a fraction: -5 had been -500 pp,
            // a gate that could never fire.
            ("slo_attainment<-5", "'-5pp' for percentage points"),
            ("error_rate>+2", "is +200 percentage points"),
            ("usd_per_million_output_tokn>+5%", "did you mean usd_per_million_output_tokens?"),
        ];
        for (text, want) in bad {
            let e = text.parse::<Rule>().unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
            assert!(e.contains(text.trim()), "{text}: {e}");
        }
        assert!(parse_rules(" , ").is_err());
    }

    /// A run of 200 requests whose first token comes `ttft` ms (and a
    /// little more, by request) after it was sent.
    fn run_of(ttft: u64) -> RunResult {
        use goodput_core::analysis::assemble::{assemble, Assembly};
        use goodput_core::{AnalysisOptions, Channel, OutputChunk, RequestRecord, Target, Tool};
        use std::time::Duration;
        let ms = Duration::from_millis;
        let recs: Vec<RequestRecord> = (0..200)
            .map(|id| {
                let sent = ms(id * 50);
                let mut r = RequestRecord::new(id, sent, sent);
                for k in 0..8 {
                    let t = sent + ms(ttft + id % 7 + k * (5 + (id + k) % 3));
                    r.chunks.push(OutputChunk { t, tokens: 1, channel: Channel::Content });
                }
                r.end = r.chunks.last().unwrap().t + ms(1);
                (r.input_tokens, r.output_tokens) = (64, 8);
                r.outcome = goodput_core::Outcome::Success;
                r
            })
            .collect();
        let a = Assembly {
            tool: Tool { name: "goodput".into(), version: "0.1.0".into(), commit: None },
            kind: "bench",
            run_id: format!("run-{ttft}"),
            started_unix_s: 1_767_225_600.0,
            interrupted: false,
            config: Default::default(),
            target: Target::default(),
            include_requests: false,
        };
        assemble(a, &recs, &AnalysisOptions::default())
    }

    /// The figures a comparison tests are one family: their p-values are
    /// adjusted together by Holm's method, as `!` rules' are, and a change
    /// is marked by its adjusted p (16 figures at 5% each had marked one
    /// on runs of the same configuration).
    #[test]
    fn the_figures_tested_are_holm_adjusted_together() {
        let (a, b) = (run_of(40), run_of(60));
        let c = compare(&[("a", &a), ("b", &b)], &[]);
        let tested: Vec<&Significance> =
            c.rows.iter().filter_map(|r| r.significance.get(1)?.as_ref()).filter(|s| s.p_value.is_some()).collect();
        assert!(tested.len() >= 2, "too few figures tested to adjust: {}", tested.len());
        for s in &tested {
            let p = s.p_value.unwrap();
            assert!(s.reason.contains(&format!("Holm-adjusted over {} figures", tested.len())), "{}", s.reason);
            assert_eq!(s.call == Call::Different, p < s.alpha, "{}", s.reason);
        }
        // By hand: 0.001, 0.03, 0.04 and 0.5 over four are 0.004, 0.09,
        // 0.09 and 0.5: only the first is still called at 5%.
        let sig = |p: f64| Significance {
            test: "t".into(),
            p_value: Some(p),
            alpha: 0.05,
            call: Call::Different,
            reason: String::new(),
        };
        let mut family = [sig(0.03), sig(0.001), sig(0.5), sig(0.04)];
        holm(family.iter_mut(), "rules", false);
        let calls: Vec<Call> = family.iter().map(|s| s.call).collect();
        assert_eq!(calls, [Call::NotShown, Call::Different, Call::NotShown, Call::NotShown]);
        assert!(family[0].reason.contains("unadjusted 0.03"), "{}", family[0].reason);
    }

    /// `--markdown` says what its marks mean, as the terminal and HTML do.
    #[test]
    fn markdown_explains_its_marks() {
        let (a, b) = (run_of(40), run_of(60));
        let text = crate::export::markdown::compare_markdown(&compare(&[("a", &a), ("b", &b)], &[]));
        assert!(text.contains("⚠️") && text.contains("\\*"), "no marks to explain: {text}");
        assert!(text.contains("✓ better, ⚠️ worse"), "{text}");
        assert!(text.contains("\\* larger than the runs' intervals allow"), "{text}");
    }

    /// With `!`, a change that is not past the threshold passes whatever
    /// the test could or could not say: the test is asked only before a
    /// rule fails. A TTFT 85 % better had been unjudged, and so failed CI.
    #[test]
    fn a_significant_rule_passes_a_change_short_of_its_threshold_without_a_test() {
        let rule: Rule = "ttft_ms.p95>+10%!".parse().unwrap();
        let cannot = Significance {
            test: "difference of percentiles".into(),
            p_value: None,
            alpha: 0.05,
            call: Call::CannotTell,
            reason: "the run's interval has no upper bound".into(),
        };
        let judged =
            |v: f64, sig: Option<Significance>| judge(&rule, (Some(100.0), Some(v)), 1, "b", "a", sig, [None, None]);
        for sig in [None, Some(cannot.clone())] {
            let better = judged(14.8, sig);
            assert_eq!(better.verdict, Verdict::Pass, "{}", better.reason);
        }
        // Past it, the test still decides: unjudged where it cannot tell,
        // or with no interval at all.
        assert_eq!(judged(150.0, Some(cannot)).verdict, Verdict::Unjudged);
        assert_eq!(judged(150.0, None).verdict, Verdict::Unjudged);
    }

    /// A relative threshold from a baseline of 0: the change is infinite,
    /// and the reason says so and names the amount to write instead.
    #[test]
    fn a_relative_rule_from_a_zero_baseline_says_the_change_is_infinite() {
        let rule: Rule = "error_rate>+5%".parse().unwrap();
        let v = judge(&rule, (Some(0.0), Some(0.02)), 1, "b", "a", None, [None, None]);
        assert_eq!(v.verdict, Verdict::Fail, "{}", v.reason);
        assert!(v.reason.contains("the baseline's error_rate is 0, so a relative change is infinite"), "{}", v.reason);
        assert!(v.reason.contains("percentage points (e.g. +1pp)"), "{}", v.reason);
        let same = judge(&rule, (Some(0.0), Some(0.0)), 1, "b", "a", None, [None, None]);
        assert_eq!(same.verdict, Verdict::Pass, "{}", same.reason);
        let rule: Rule = "requests.failed>+5%".parse().unwrap();
        let v = judge(&rule, (Some(0.0), Some(3.0)), 1, "b", "a", None, [None, None]);
        assert!(v.reason.contains("an amount (a bare number)"), "{}", v.reason);
    }

    #[test]
    fn relative_change_edges() {
        assert_eq!(relative_change(100.0, 110.0), 0.1);
        assert_eq!(relative_change(-10.0, -5.0), 0.5);
        assert_eq!(relative_change(0.0, 0.0), 0.0);
        assert_eq!(relative_change(0.0, 1.0), f64::INFINITY);
        assert_eq!(relative_change(0.0, -1.0), f64::NEG_INFINITY);
    }

    #[test]
    fn marks_follow_direction() {
        assert_eq!(mark(Better::Lower, Some(0.2)), " !");
        assert_eq!(mark(Better::Lower, Some(-0.2)), " +");
        assert_eq!(mark(Better::Higher, Some(-0.2)), " !");
        assert_eq!(mark(Better::Higher, Some(0.005)), "");
        assert_eq!(mark(Better::Neither, Some(0.5)), "");
    }
}
