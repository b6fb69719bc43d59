//! A sweep: a series of runs at rising load, and what they say together —
//! where throughput saturates, the best goodput, the highest load that meets
//! every SLO, and the operating point to pick.

use crate::doc::config::SweepConfig;
use crate::doc::result::{RunResult, Target, Tool};
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The load of one point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Load {
    /// Closed loop: requests in flight.
    Concurrency(u64),
    /// Open loop: requests per second.
    Rate(f64),
}

impl Load {
    pub fn value(self) -> f64 {
        match self {
            Load::Concurrency(c) => c as f64,
            Load::Rate(r) => r,
        }
    }

    /// ```
    /// use goodput_core::doc::sweep::Load;
    /// assert_eq!(Load::Rate(2.5).label(), "2.5 req/s");
    /// assert_eq!(Load::Rate(1e300).label(), "1e300 req/s");
    /// assert_eq!(Load::Concurrency(8).label(), "concurrency 8");
    /// ```
    pub fn label(self) -> String {
        match self {
            Load::Concurrency(c) => format!("concurrency {c}"),
            // A rate given on the command line as it was written (2.5); one
            // worked out (a trace's offered rate) to three decimals.
            // Past a million a second, in exponent form (1e300 had been a
            // label of 300 digits).
            Load::Rate(r) if r >= 1e6 => format!("{r:e} req/s"),
            Load::Rate(r) if format!("{r}").len() > 8 => format!("{r:.3} req/s"),
            Load::Rate(r) => format!("{r} req/s"),
        }
    }
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SweepPoint {
    pub load: Load,
    /// How the point was chosen: `grid`, `baseline`, `ceiling`, `spread`, `search`.
    pub origin: String,
    pub result: RunResult,
}

/// A reference to one point in the analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PointRef {
    /// Index into `points`.
    pub index: usize,
    pub load: Load,
    pub output_tokens_per_s: f64,
    pub ttft_p50_ms: Option<f64>,
    /// Goodput (output tokens/s of good requests) when an SLO was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_tokens_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_million_output_tokens: Option<f64>,
}

/// What the points say together.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SweepAnalysis {
    /// The lowest load whose output throughput is within 10% of the sweep's
    /// best while TTFT keeps climbing past it. `None` when the sweep never
    /// saturated.
    pub saturation: Option<PointRef>,
    pub max_throughput: Option<PointRef>,
    /// The point with the highest goodput (SLO given).
    pub max_goodput: Option<PointRef>,
    /// The highest load at which every SLO objective passed and attainment
    /// is at least the target (SLO given).
    pub highest_load_meeting_slo: Option<PointRef>,
    /// The point to run at, and why.
    pub recommended: Option<PointRef>,
    pub recommendation: Option<String>,
    pub notes: Vec<String>,
}

/// One sweep document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct SweepResult {
    /// `goodput/v1`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = crate::SCHEMA)))]
    pub schema: String,
    pub tool: Tool,
    /// `sweep`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "sweep")))]
    pub kind: String,
    pub started_unix_s: f64,
    #[serde(default)]
    pub interrupted: bool,
    pub config: SweepConfig,
    pub target: Target,
    /// In the order they ran.
    pub points: Vec<SweepPoint>,
    pub analysis: SweepAnalysis,
}

/// Attainment a point must reach, beside passing every objective, to count
/// as meeting the SLO.
pub const DEFAULT_ATTAINMENT_TARGET: f64 = 0.9;

fn point_ref(i: usize, p: &SweepPoint) -> PointRef {
    let s = &p.result.summary;
    PointRef {
        index: i,
        load: p.load,
        output_tokens_per_s: s.throughput.output_tokens_per_s,
        ttft_p50_ms: s.ttft_ms.p(50.0),
        goodput_tokens_per_s: s.goodput.as_ref().map(|g| g.output_tokens_per_s),
        usd_per_million_output_tokens: p.result.cost.as_ref().and_then(|c| c.usd_per_million_output_tokens),
    }
}

/// Whether a point met its SLO: every objective passed and attainment
/// reached `attainment_target`. `None` when the point carries no SLO.
pub fn meets_slo(p: &RunResult, attainment_target: f64) -> Option<bool> {
    let slo = p.slo.as_ref()?;
    let g = p.summary.goodput.as_ref()?;
    Some(slo.pass && g.slo_attainment >= attainment_target)
}

/// Whether a point measured a steady state (`summary.stability`; a point of
/// a document from before the verdict counts as steady). A point that is
/// not is never recommended, nor counted as meeting the SLO.
pub fn steady(p: &RunResult) -> bool {
    p.summary.stability.as_ref().is_none_or(|s| s.steady)
}

/// Whether a point's window was too short to measure its rate (see
/// [`crate::analysis::stability::too_short`]); a steady one never is.
fn too_short(p: &RunResult) -> bool {
    let Some(s) = p.summary.stability.as_ref().filter(|s| !s.steady) else { return false };
    let users = (!s.open_loop).then(|| p.config.load.as_ref().and_then(|l| l.concurrency)).flatten();
    crate::analysis::stability::too_short(s.transient_share, p.summary.requests.sent, users)
}

/// How hard a point loaded the server: mean requests in flight. Unlike the
/// load value it orders closed-loop and open-loop points on one axis (an
/// overloaded open loop piles requests up in flight).
pub fn intensity(p: &SweepPoint) -> f64 {
    p.result.summary.in_flight.mean
}

/// The index of the knee of an increasing, bending curve given as (x, y)
/// pairs sorted by x: the point with the largest y − x after scaling both to
/// 0..1. `None` with fewer than three points or a flat curve.
pub fn knee(xy: &[(f64, f64)]) -> Option<usize> {
    if xy.len() < 3 {
        return None;
    }
    let (x0, x1) = (xy[0].0, xy[xy.len() - 1].0);
    let (ymin, ymax) = xy.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.1), b.max(p.1)));
    if x1 <= x0 || ymax <= ymin {
        return None;
    }
    let d = |p: &(f64, f64)| (p.1 - ymin) / (ymax - ymin) - (p.0 - x0) / (x1 - x0);
    let (i, best) = xy.iter().enumerate().map(|(i, p)| (i, d(p))).max_by(|a, b| a.1.total_cmp(&b.1))?;
    (best > 0.0).then_some(i)
}

/// Analyses the points of a sweep.
pub fn analyze_sweep(points: &[SweepPoint], attainment_target: f64) -> SweepAnalysis {
    let mut a = SweepAnalysis::default();
    let mut order: Vec<usize> =
        (0..points.len()).filter(|&i| points[i].result.summary.requests.completed > 0).collect();
    order.sort_by(|&x, &y| points[x].load.value().total_cmp(&points[y].load.value()));
    if order.is_empty() {
        a.notes.push("no point completed a request".into());
        return a;
    }
    // A sweep of embeddings or rerank points: no output, so its throughput
    // is input tokens and its latency E2E.
    let pooled = order.iter().all(|&i| points[i].result.summary.no_output());
    let thr = |i: usize| {
        let th = &points[i].result.summary.throughput;
        if pooled {
            th.input_tokens_per_s
        } else {
            th.output_tokens_per_s
        }
    };
    let ttft = |i: usize| {
        let s = &points[i].result.summary;
        if pooled { s.e2e_ms.p(50.0) } else { s.ttft_ms.p(50.0) }.unwrap_or(0.0)
    };
    let best = *order.iter().max_by(|&&x, &&y| thr(x).total_cmp(&thr(y))).expect("not empty");
    a.max_throughput = Some(point_ref(best, &points[best]));

    // Saturation: the knee of output throughput against load (Kneedle: the
    // point farthest above the chord once both axes are scaled to 0..1),
    // provided TTFT climbs past it, so the extra load only queues. Not over
    // points whose window was too short to measure a rate: theirs is the
    // window's, not the load's (64 requests at 34 to 64 users had made a
    // flat knee at 34).
    // Points past capacity (overloaded, TTFT climbing) stay: they are the
    // knee's evidence; only windows too short to measure a rate go.
    let knee_order: Vec<usize> = order.iter().copied().filter(|&i| !too_short(&points[i].result)).collect();
    let some_short = knee_order.len() < order.len();
    let found = knee_order.last().and_then(|&last| {
        let k = knee(&knee_order.iter().map(|&i| (intensity(&points[i]), thr(i))).collect::<Vec<_>>())?;
        (knee_order[k] != last && ttft(last) >= 1.5 * ttft(knee_order[k]).max(1e-9)).then_some(knee_order[k])
    });
    match found {
        Some(k) => a.saturation = Some(point_ref(k, &points[k])),
        None => a.notes.push(format!(
            "throughput was still rising, or {} flat, at the highest {}load: the sweep did not reach saturation",
            if pooled { "E2E" } else { "TTFT" },
            if some_short { "measured " } else { "" }
        )),
    }

    let judged: Vec<usize> = order.iter().copied().filter(|&i| points[i].result.slo.is_some()).collect();
    if !judged.is_empty() {
        let goodput = |i: usize| {
            let g = points[i].result.summary.goodput.as_ref();
            g.map_or(0.0, |g| if pooled { g.requests_per_s } else { g.output_tokens_per_s })
        };
        let g = *judged.iter().max_by(|&&x, &&y| goodput(x).total_cmp(&goodput(y))).expect("not empty");
        a.max_goodput = Some(point_ref(g, &points[g]));
        let meeting: Vec<usize> = judged
            .iter()
            .copied()
            .filter(|&i| meets_slo(&points[i].result, attainment_target) == Some(true) && steady(&points[i].result))
            .collect();
        if let Some(&hi) = meeting.iter().max_by(|&&x, &&y| points[x].load.value().total_cmp(&points[y].load.value())) {
            a.highest_load_meeting_slo = Some(point_ref(hi, &points[hi]));
            // Among the points that meet the SLO, the one with the most
            // goodput (so the cheapest per good token).
            let rec = *meeting.iter().max_by(|&&x, &&y| goodput(x).total_cmp(&goodput(y))).expect("not empty");
            a.recommended = Some(point_ref(rec, &points[rec]));
            a.recommendation = Some(format!(
                "{}: the most goodput among the loads that meet every SLO objective with at least {:.0}% attainment",
                points[rec].load.label(),
                attainment_target * 100.0
            ));
        } else if judged.iter().any(|&i| meets_slo(&points[i].result, attainment_target) == Some(true)) {
            a.notes.push(
                "no steady load met every SLO objective (the loads that did were not steady states): \
                 run longer points (--duration) or lower loads"
                    .into(),
            );
        } else {
            a.notes.push("no load met every SLO objective: relax the SLO or add capacity".into());
        }
    } else if let Some(s) = a.saturation.as_ref().filter(|s| steady(&points[s.index].result)) {
        a.recommended = Some(s.clone());
        // The knee's share of the most throughput measured, said where it is
        // short of it: on a sparse grid (1, 16, 256) the knee can sit far
        // below the best, and "near its best" had been said of 22 % of it.
        let share = thr(s.index) / thr(best).max(f64::MIN_POSITIVE);
        a.recommendation = Some(if share >= 0.95 {
            format!(
                "{}: the saturation point, where throughput is near its best before the queue builds (give --slo \
                 for an SLO-aware choice)",
                s.load.label()
            )
        } else {
            format!(
                "{}: the saturation point, the knee of throughput against load, at {:.0}% of the most measured \
                 ({}): a finer grid between them would place it better (give --slo for an SLO-aware choice)",
                s.load.label(),
                share * 100.0,
                points[best].load.label()
            )
        });
    }
    let unsteady: Vec<String> =
        order.iter().filter(|&&i| !steady(&points[i].result)).map(|&i| points[i].load.label()).collect();
    if !unsteady.is_empty() {
        a.notes.push(format!(
            "not steady, so never recommended: {} (each point's summary.stability.reason says why)",
            unsteady.join(", ")
        ));
    }
    a
}
