//! Whether a change between two runs is larger than their intervals allow
//! (docs/metrics.md, "Is a change real?"): a test per figure, named, with
//! its p-value, read from the runs' `summary.intervals` alone, so two saved
//! documents are enough.
//!
//! - A percentile of a per-request latency, where both runs carry their
//!   records (and no sessions), tested on the two runs' per-request values
//!   (`rank`): the median by the Mann–Whitney U test, which asks whether
//!   one run's requests tend to be slower than the other's; any other
//!   percentile by Mood's quantile test at that percentile, which asks
//!   whether more of one run's requests lie beyond the pooled percentile,
//!   so a change confined to the tail is seen there and not at the median.
//!   Fisher's exact test holds its level at any size, so this is made where
//!   a run's interval does not bound the percentile too; where too few
//!   values lie above the pooled percentile for any split of them to reach
//!   the level, no call is made.
//! - A percentile otherwise: the difference of the two percentiles over its standard
//!   error, each run's standard error read from its order-statistic
//!   interval on the side that faces the other run (half-width / z), and
//!   the normal distribution. Where that side is unbounded (a p99 of 30
//!   requests), no call is made.
//! - A rate: Welch's t on the two runs' sub-window rates (the batch means
//!   their intervals came from), with Welch–Satterthwaite's degrees of freedom.
//! - Attainment: the two-proportion z test on good / judged requests
//!   (goodput's, or those the verdict counted for the limits' attainment).
//! - Any headline figure of two documents of `--runs N`, whose values a
//!   comparison then reads as the means over their runs: Welch's t on the
//!   runs' values, each run one draw (the run-to-run noise that one run's
//!   intervals cannot see).
//! - Where a run's requests depended on their neighbours at a figure (its
//!   interval widened, `intervals.dependence`): a percentile is tested on
//!   the widened intervals and not on the records, whose tests take the
//!   requests as independent; an attainment counts that run's requests as
//!   `n / τ′`. The reason says so.

use super::rank::{mann_whitney, quantile_test, samples, MIN_SAMPLES};
use crate::metric::{Dist, Metric, Scalar, Stat};
use goodput_core::analysis::interval::{
    normal_cdf, normal_quantile, t_cdf, t_quantile, Interval, Intervals, DEFAULT_CONFIDENCE,
};
use goodput_core::RunResult;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::Serialize;

/// What a test says of a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// Larger than the runs' intervals allow: p under 1 − confidence.
    Different,
    /// Within what the two samples' noise gives.
    NotShown,
    /// No test could be made: a side the sample does not bound (too few
    /// requests for that percentile), or a run without intervals.
    CannotTell,
}

/// One figure's change judged against the noise of the two runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Significance {
    /// The test: `Mann–Whitney U on per-request values`, `difference of
    /// percentiles`, `Welch's t on sub-window rates`, `two-proportion z`.
    pub test: String,
    /// Two-sided; absent where no test was made.
    pub p_value: Option<f64>,
    /// The level the p-value is held to: 1 − the baseline's confidence.
    pub alpha: f64,
    pub call: Call,
    /// In words: `p = 0.003 < 0.05`, or why no call was made.
    pub reason: String,
}

/// The test of metric `m` between `base` and `run`; `None` for a figure
/// with no interval (ITL, counts, cost). Two documents of `--runs N` are
/// tested on their runs' values ([`test_in`]).
pub fn test(m: &Metric, base: &RunResult, run: &RunResult) -> Option<Significance> {
    test_in(m, base, run, repeated(base) && repeated(run))
}

/// Whether `r` is a document of two runs or more (`--runs N`).
pub fn repeated(r: &RunResult) -> bool {
    r.repeats.as_ref().is_some_and(|rep| rep.n >= 2)
}

/// The test of `m` in a comparison that reads its runs' means when
/// `by_means` (every document compared holds repeated runs): Welch's t on
/// the two documents' runs' values of a figure their repeats blocks keep;
/// otherwise, and for a figure they do not keep, as [`test`] on one run.
pub fn test_in(m: &Metric, base: &RunResult, run: &RunResult, by_means: bool) -> Option<Significance> {
    if by_means {
        if let Some(s) = on_runs(m, base, run) {
            return Some(s);
        }
    }
    let kind = Kind::of(m)?;
    // Where a run's requests depended on their neighbours at this figure
    // (its interval was widened), the tests on records, which take them as
    // independent, step aside for the widened intervals; said in the reason.
    let dependent = dependent_runs(&kind, m, base, run);
    if let Kind::Percentile(d, p) = kind {
        if dependent.is_none() {
            if let Some(s) = on_records(d, p, base, run) {
                return Some(s);
            }
        }
    }
    let (bi, ri) = match (base.summary.intervals.as_ref(), run.summary.intervals.as_ref()) {
        (Some(b), Some(r)) => (b, r),
        _ => {
            return Some(Significance {
                test: kind.name().into(),
                p_value: None,
                alpha: 0.05,
                call: Call::CannotTell,
                reason: "a run has no intervals (written before goodput gave them): analyse it again with goodput \
                         report --records"
                    .into(),
            })
        }
    };
    // 1 − 0.95 is 0.050000000000000044 in floating point: said as 0.05.
    let alpha = ((1.0 - bi.confidence) * 1e9).round() / 1e9;
    let (Some(v0), Some(v1)) = (m.value(base), m.value(run)) else { return None };
    let made = match kind {
        Kind::Percentile(d, p) => percentile(v0, v1, bi.percentile(d.key(), p), ri.percentile(d.key(), p), bi, ri),
        Kind::Rate => rate(v0, v1, rate_of(m, bi), rate_of(m, ri), bi, ri),
        Kind::Proportion => proportion(m, base, run),
    };
    let widened = dependent
        .map(|who| format!(" ({who} requests depended on their neighbours: on the widened intervals)"))
        .unwrap_or_default();
    Some(match made {
        Ok(p) => Significance {
            test: kind.name().into(),
            p_value: Some(p),
            alpha,
            call: if p < alpha { Call::Different } else { Call::NotShown },
            reason: format!("p = {} {} {alpha}{widened}", p_text(p), if p < alpha { "<" } else { "≥" }),
        },
        Err(why) => Significance {
            test: kind.name().into(),
            p_value: None,
            alpha,
            call: Call::CannotTell,
            reason: format!("{why}{widened}"),
        },
    })
}

/// The dependence factor of `r` at the figure `kind` names, where its
/// interval was widened for it (`summary.intervals.dependence`).
fn dependence_of(kind: &Kind, m: &Metric, r: &RunResult) -> Option<f64> {
    let dep = &r.summary.intervals.as_ref()?.dependence;
    match kind {
        Kind::Percentile(d, p) => dep.get(d.key())?.get(&goodput_core::analysis::stats::percentile_key(*p)).copied(),
        Kind::Proportion => {
            let key = match m {
                Metric::Scalar(Scalar::SloLimitsAttainment) => "limits_attainment",
                _ => "slo_attainment",
            };
            dep.get("goodput")?.get(key).copied()
        }
        Kind::Rate => None,
    }
}

/// Whose requests depended on their neighbours at the figure `m` (`the
/// baseline's`, `the run's`, `both runs'`), where either's interval was
/// widened for it.
fn dependent_runs(kind: &Kind, m: &Metric, base: &RunResult, run: &RunResult) -> Option<&'static str> {
    match (dependence_of(kind, m, base).is_some(), dependence_of(kind, m, run).is_some()) {
        (true, true) => Some("both runs'"),
        (true, false) => Some("the baseline's"),
        (false, true) => Some("the run's"),
        (false, false) => None,
    }
}

/// The test of the `p`-th percentile of `d` on the two runs' per-request
/// values (Mann–Whitney U for the median, Mood's quantile test at `p`
/// otherwise), where both carry their records, neither ran sessions (whose
/// requests are not independent) and each has [`MIN_SAMPLES`] values or
/// more. Mood's test holds its level at any size (Fisher's exact test), so
/// it is made where a run's interval does not bound the percentile too (a
/// p95 of 60 requests); where no split of the values above the pooled
/// percentile could reach the level (a p99 of 30 requests a run: one value
/// above it), it says it cannot tell, as the interval test would.
fn on_records(d: Dist, p: f64, base: &RunResult, run: &RunResult) -> Option<Significance> {
    let sessions = |r: &RunResult| r.summary.sessions.is_some();
    if sessions(base) || sessions(run) {
        return None;
    }
    let x = samples(d.key(), base.requests.as_deref()?)?;
    let y = samples(d.key(), run.requests.as_deref()?)?;
    if x.len() < MIN_SAMPLES || y.len() < MIN_SAMPLES {
        return None;
    }
    let conf = base.summary.intervals.as_ref().map_or(DEFAULT_CONFIDENCE, |i| i.confidence);
    let alpha = ((1.0 - conf) * 1e9).round() / 1e9;
    let (test, p_value, detail) = if p == 50.0 {
        let t = mann_whitney(&x, &y)?;
        (MANN_WHITNEY, t.p, format!("U = {}", t.u))
    } else {
        let t = quantile_test(&x, &y, p / 100.0)?;
        let above = format!("{} and {} above the pooled p{} of {:.2} ms", t.above.0, t.above.1, p, t.split);
        if t.least_p >= alpha {
            return Some(Significance {
                test: MOOD_QUANTILE.into(),
                p_value: None,
                alpha,
                call: Call::CannotTell,
                reason: format!(
                    "cannot tell: too few requests for the p{p} ({above}, {} and {} requests): all of them in one run \
                     would give p = {}, not under {alpha}",
                    x.len(),
                    y.len(),
                    p_text(t.least_p)
                ),
            });
        }
        (MOOD_QUANTILE, t.p, above)
    };
    let different = p_value < alpha;
    Some(Significance {
        test: test.into(),
        p_value: Some(p_value),
        alpha,
        call: if different { Call::Different } else { Call::NotShown },
        reason: format!(
            "p = {} {} {alpha} ({detail}, {} and {} requests)",
            p_text(p_value),
            if different { "<" } else { "≥" },
            x.len(),
            y.len()
        ),
    })
}

/// Welch's t on the runs' values of `m` in the two documents' `repeats`
/// blocks, where each has it in two runs or more.
fn on_runs(m: &Metric, base: &RunResult, run: &RunResult) -> Option<Significance> {
    let path = m.path();
    let values = |r: &RunResult| -> Option<Vec<f64>> {
        let v: Vec<f64> = r.repeats.as_ref()?.runs.iter().filter_map(|x| x.figures.get(&path).copied()).collect();
        (v.len() >= 2).then_some(v)
    };
    let (x, y) = (values(base)?, values(run)?);
    let conf = base.repeats.as_ref().map_or(DEFAULT_CONFIDENCE, |r| r.confidence);
    let alpha = ((1.0 - conf) * 1e9).round() / 1e9;
    let p = welch(&x, &y);
    Some(Significance {
        test: WELCH_RUNS.into(),
        p_value: Some(p),
        alpha,
        call: if p < alpha { Call::Different } else { Call::NotShown },
        reason: format!(
            "p = {} {} {alpha} ({} and {} runs)",
            p_text(p),
            if p < alpha { "<" } else { "≥" },
            x.len(),
            y.len()
        ),
    })
}

/// The two-sided p of Welch's t between the means of `x` and `y` (two
/// values or more each), with Welch–Satterthwaite's degrees of freedom.
pub fn welch(x: &[f64], y: &[f64]) -> f64 {
    let stats = |v: &[f64]| {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var / n, n - 1.0)
    };
    let ((m0, s0, d0), (m1, s1, d1)) = (stats(x), stats(y));
    let se2 = s0 + s1;
    if se2 == 0.0 {
        return if m0 == m1 { 1.0 } else { 0.0 };
    }
    let df = se2 * se2 / (s0 * s0 / d0 + s1 * s1 / d1);
    let df = if df.is_finite() { df.max(1.0) } else { d0 + d1 };
    (2.0 * (1.0 - t_cdf((m1 - m0).abs() / se2.sqrt(), df))).clamp(0.0, 1.0)
}

/// The name of the test on repeated runs.
pub const WELCH_RUNS: &str = "Welch's t on the runs' values";

/// The name of the test of a median on per-request records.
pub const MANN_WHITNEY: &str = "Mann–Whitney U on per-request values";
/// The name of the test of another percentile on per-request records.
pub const MOOD_QUANTILE: &str = "Mood's quantile test on per-request values";

pub(crate) fn p_text(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".into()
    } else {
        format!("{p:.4}")
    }
}

enum Kind {
    Percentile(Dist, f64),
    Rate,
    Proportion,
}

impl Kind {
    fn of(m: &Metric) -> Option<Kind> {
        match m {
            Metric::Dist(d, Stat::P(p)) if goodput_core::analysis::interval::PER_REQUEST_KEYS.contains(&d.key()) => {
                Some(Kind::Percentile(*d, *p))
            }
            Metric::Scalar(
                Scalar::RequestsPerS
                | Scalar::OutputTokensPerS
                | Scalar::GoodputRequestsPerS
                | Scalar::GoodputOutputTokensPerS,
            ) => Some(Kind::Rate),
            Metric::Scalar(Scalar::SloAttainment | Scalar::SloLimitsAttainment) => Some(Kind::Proportion),
            _ => None,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            Kind::Percentile(..) => "difference of percentiles",
            Kind::Rate => "Welch's t on sub-window rates",
            Kind::Proportion => "two-proportion z",
        }
    }
}

fn rate_of<'a>(m: &Metric, iv: &'a Intervals) -> Option<&'a Interval> {
    match m {
        Metric::Scalar(Scalar::RequestsPerS) => Some(&iv.throughput.requests_per_s),
        Metric::Scalar(Scalar::OutputTokensPerS) => Some(&iv.throughput.output_tokens_per_s),
        Metric::Scalar(Scalar::GoodputRequestsPerS) => iv.goodput.as_ref().map(|g| &g.requests_per_s),
        Metric::Scalar(Scalar::GoodputOutputTokensPerS) => iv.goodput.as_ref().map(|g| &g.output_tokens_per_s),
        _ => None,
    }
}

/// The two-sided p of `v1 − v0`, each standard error from the side of its
/// interval that faces the other value.
fn percentile(
    v0: f64,
    v1: f64,
    i0: Option<&Interval>,
    i1: Option<&Interval>,
    b: &Intervals,
    r: &Intervals,
) -> Result<f64, String> {
    let (i0, i1) = (i0.ok_or("the baseline has no interval for it")?, i1.ok_or("the run has no interval for it")?);
    if v0 == v1 {
        return Ok(1.0);
    }
    let up = v1 > v0;
    let side = |v: f64, i: &Interval, upper: bool, conf: f64, who: &str| -> Result<f64, String> {
        let z = normal_quantile(0.5 + conf / 2.0);
        let bound = if upper { i.hi } else { i.lo };
        let b = bound.ok_or_else(|| {
            format!(
                "cannot tell: the {who}'s interval has no {} bound (too few requests for that percentile)",
                if upper { "upper" } else { "lower" }
            )
        })?;
        Ok((b - v).abs() / z)
    };
    let s0 = side(v0, i0, up, b.confidence, "baseline")?;
    let s1 = side(v1, i1, !up, r.confidence, "run")?;
    let se = (s0 * s0 + s1 * s1).sqrt();
    if se == 0.0 {
        return Ok(0.0);
    }
    Ok(2.0 * (1.0 - normal_cdf((v1 - v0).abs() / se)))
}

/// Welch's t on the sub-window rates, each run's standard error from its
/// interval's upper half-width (the lower may be clipped at zero).
fn rate(
    v0: f64,
    v1: f64,
    i0: Option<&Interval>,
    i1: Option<&Interval>,
    b: &Intervals,
    r: &Intervals,
) -> Result<f64, String> {
    let se = |v: f64, i: Option<&Interval>, iv: &Intervals, who: &str| -> Result<(f64, f64), String> {
        let hi = i.and_then(|i| i.hi).ok_or_else(|| format!("cannot tell: the {who} has no interval for it"))?;
        let df = f64::from(iv.batches.max(2)) - 1.0;
        Ok(((hi - v) / t_quantile(0.5 + iv.confidence / 2.0, df), df))
    };
    let ((s0, d0), (s1, d1)) = (se(v0, i0, b, "baseline")?, se(v1, i1, r, "run")?);
    if v0 == v1 {
        return Ok(1.0);
    }
    let var = s0 * s0 + s1 * s1;
    if var == 0.0 {
        return Ok(0.0);
    }
    let df = var * var / (s0.powi(4) / d0 + s1.powi(4) / d1);
    let df = if df.is_finite() { df.max(1.0) } else { d0 + d1 };
    Ok(2.0 * (1.0 - t_cdf((v1 - v0).abs() / var.sqrt(), df)))
}

/// The pooled two-proportion z test on good / judged requests: goodput's,
/// or, for the limits' attainment, those the verdict counted.
fn proportion(m: &Metric, base: &RunResult, run: &RunResult) -> Result<f64, String> {
    let g = |r: &RunResult| match m {
        Metric::Scalar(Scalar::SloLimitsAttainment) => r
            .slo
            .as_ref()
            .filter(|s| s.limits_attainment().is_some())
            .and_then(|s| s.attainment.as_ref())
            .map(|a| (a.good_requests as f64, a.judged_requests as f64)),
        _ => r.summary.goodput.as_ref().map(|g| (g.good_requests as f64, g.judged_requests as f64)),
    };
    let ((g0, n0), (g1, n1)) = (g(base).ok_or("the baseline was not judged")?, g(run).ok_or("the run was not judged")?);
    if n0 == 0.0 || n1 == 0.0 {
        return Err("cannot tell: a run judged no request".into());
    }
    // Where a run's requests met the SLO in runs of their neighbours, its
    // share counts as `n / τ′` requests, as its widened interval does.
    let effective = |r: &RunResult, g: f64, n: f64| match dependence_of(&Kind::Proportion, m, r) {
        Some(tau) => (g / tau, n / tau),
        None => (g, n),
    };
    let ((g0, n0), (g1, n1)) = (effective(base, g0, n0), effective(run, g1, n1));
    let pooled = (g0 + g1) / (n0 + n1);
    let se = (pooled * (1.0 - pooled) * (1.0 / n0 + 1.0 / n1)).sqrt();
    let d = g1 / n1 - g0 / n0;
    if se == 0.0 {
        return Ok(if d == 0.0 { 1.0 } else { 0.0 });
    }
    Ok(2.0 * (1.0 - normal_cdf(d.abs() / se)))
}
