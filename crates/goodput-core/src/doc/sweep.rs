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
    /// assert_eq!(Load::Rate(1e9).label(), "1,000,000,000 req/s");
    /// assert_eq!(Load::Rate(1e300).label(), "unlimited rate");
    /// assert_eq!(Load::Rate(f64::INFINITY).label(), "unlimited rate");
    /// assert_eq!(Load::Concurrency(8).label(), "concurrency 8");
    /// ```
    pub fn label(self) -> String {
        match self {
            Load::Concurrency(c) => format!("concurrency {c}"),
            // A rate given on the command line as it was written (2.5); one
            // worked out (a trace's offered rate) to three decimals.
            // From a trillion a second (or `inf`: every request at once), a
            // rate no server meets, so in words: 1e300 had been a label of
            // 300 digits, and then `1e300 req/s` in exponent form, which
            // read as a typo beside the other loads.
            Load::Rate(r) if !r.is_finite() || r >= UNLIMITED_RATE => "unlimited rate".into(),
            // Past a million a second, whole requests with their thousands
            // marked (`1e9` had been written in exponent form).
            Load::Rate(r) if r >= 1e6 => format!("{} req/s", crate::util::thousands(r.round() as u64)),
            Load::Rate(r) if format!("{r}").len() > 8 => format!("{r:.3} req/s"),
            Load::Rate(r) => format!("{r} req/s"),
        }
    }
}

/// The rate, requests/s, from which [`Load::label`] calls a rate
/// unlimited: far past what any server serves.
pub const UNLIMITED_RATE: f64 = 1e12;

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
    /// The steady point with the highest goodput (SLO given): a point that
    /// was not steady is never it, so it is null where only such points
    /// had goodput (a note says where the most was).
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

impl SweepResult {
    /// The attainment its points were judged by: the sweep's own
    /// `config.attainment_target` (`--attainment`, or the SLO's
    /// `attainment>=` term), or [`DEFAULT_ATTAINMENT_TARGET`] where the
    /// document records none (a target outside (0, 1], as a document that
    /// leaves the field out reads).
    pub fn attainment_target(&self) -> f64 {
        let t = self.config.attainment_target;
        if t > 0.0 && t <= 1.0 {
            t
        } else {
            DEFAULT_ATTAINMENT_TARGET
        }
    }

    /// Whether point `i` met the SLO by [`Self::attainment_target`], as the
    /// sweep's analysis judged it (see [`meets_slo`]).
    pub fn point_meets_slo(&self, i: usize) -> Option<bool> {
        meets_slo(&self.points.get(i)?.result, self.attainment_target())
    }
}

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

/// Whether a point met its SLO: every objective passed and, where the SLO
/// judges an attainment (limits, or an `attainment>=` term), the share it
/// counts reached `attainment_target`. `None` when the point carries no
/// SLO. An SLO of percentile objectives alone is judged by their
/// percentiles, as `bench` judges it: held to the share of requests within
/// every threshold, `ttft:p50<=224ms` had missed at a load whose p50 was
/// 223 ms (62% within), a p50 judged as a p90.
pub fn meets_slo(p: &RunResult, attainment_target: f64) -> Option<bool> {
    let slo = p.slo.as_ref()?;
    p.summary.goodput.as_ref()?;
    Some(slo.pass && slo.attainment.as_ref().is_none_or(|a| a.measured >= attainment_target))
}

/// Whether a point measured a steady state (`summary.stability`; a point of
/// a document from before the verdict counts as steady). A point that is
/// not is never recommended, nor counted as meeting the SLO. A point that
/// completed no request measured nothing, so is not steady either way.
pub fn steady(p: &RunResult) -> bool {
    p.summary.requests.completed > 0 && p.summary.stability.as_ref().is_none_or(|s| s.steady)
}

/// Whether a point's window was too short to measure its rate (see
/// [`crate::analysis::stability::too_short`]); a steady one never is.
fn too_short(p: &RunResult) -> bool {
    let Some(s) = p.summary.stability.as_ref().filter(|s| !s.steady) else { return false };
    let users = (!s.open_loop).then(|| p.config.load.as_ref().and_then(|l| l.concurrency)).flatten();
    crate::analysis::stability::too_short(s.transient_share, p.summary.requests.sent, users)
}

/// The points whose requests failed, each with its share, in words: a
/// server that died mid-sweep had gone without a word (its points' figures
/// count only the requests that succeeded).
fn failures_note(points: &[SweepPoint]) -> Option<String> {
    let failing: Vec<String> = points
        .iter()
        .filter(|p| p.result.summary.requests.failed > 0)
        .map(|p| {
            let r = &p.result.summary.requests;
            let kinds: Vec<String> = r.errors_by_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
            format!(
                "{} ({} of {}, {:.0}%{})",
                p.load.label(),
                r.failed,
                r.sent,
                100.0 * r.failed as f64 / r.sent.max(1) as f64,
                if kinds.is_empty() { String::new() } else { format!(": {}", kinds.join(", ")) }
            )
        })
        .collect();
    (!failing.is_empty()).then(|| {
        format!(
            "requests failed at {}: each point's figures count only the requests that succeeded \
             (summary.requests.error_samples says what the server answered)",
            failing.join("; ")
        )
    })
}

/// Whether a point at `load` or above on `axis` had 10% or more of its
/// measured requests fail.
fn failing_from(points: &[SweepPoint], axis: LoadAxis, load: f64) -> bool {
    points.iter().filter(|p| axis.at(p) >= load).any(|p| {
        let r = &p.result.summary.requests;
        r.failed > 0 && r.failed as f64 >= 0.1 * r.sent as f64
    })
}

/// The requests per second a point sustained: over its judged stretch
/// when it was steady (its window's rate is lowered by the ramp-up and
/// drain), else over its window.
pub fn sustained_rps(r: &RunResult) -> f64 {
    match &r.summary.stability {
        Some(s) if sustained_over_steady_stretch(r) => s.achieved_rps,
        _ => r.summary.throughput.requests_per_s,
    }
}

/// Whether [`sustained_rps`] is the rate over a steady stretch (else the
/// window's).
pub fn sustained_over_steady_stretch(r: &RunResult) -> bool {
    r.summary.stability.as_ref().is_some_and(|s| s.steady && s.achieved_rps > 0.0)
}

/// The one scale a sweep's points are ordered and compared on ("the
/// highest load", "the highest load meeting the SLO"): the load's own
/// value where every point is of one kind, else requests per second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadAxis {
    /// Every point a closed loop: requests in flight.
    Concurrency,
    /// Every point an open loop: requests per second offered.
    Rate,
    /// Both kinds (`sweep --auto`): an open loop's rate, and the requests
    /// per second a closed loop sustained ([`sustained_rps`]). Concurrency
    /// 8 and 33.8 req/s had been compared as 8 against 33.8.
    Mixed,
}

impl LoadAxis {
    pub fn of(points: &[SweepPoint]) -> LoadAxis {
        let rate = |p: &SweepPoint| matches!(p.load, Load::Rate(_));
        match (points.iter().any(rate), points.iter().all(rate)) {
            (true, true) => LoadAxis::Rate,
            (true, false) => LoadAxis::Mixed,
            _ => LoadAxis::Concurrency,
        }
    }

    /// Where point `p` lies on the axis.
    pub fn at(self, p: &SweepPoint) -> f64 {
        match (self, p.load) {
            (LoadAxis::Mixed, Load::Concurrency(_)) => sustained_rps(&p.result),
            (_, load) => load.value(),
        }
    }

    /// The axis's name, with its unit, for a chart.
    pub fn label(self) -> &'static str {
        match self {
            LoadAxis::Concurrency => "concurrency (requests in flight)",
            LoadAxis::Rate => "request rate (req/s)",
            LoadAxis::Mixed => "load (req/s: the rate offered, or what a concurrency sustained)",
        }
    }
}

/// What a sweep's analysis says of saturation where it names no point,
/// in a few words (a card's): that the sweep went past it, that it cannot
/// be told, or that it was not reached, as its notes say.
pub fn saturation_unplaced(a: &SweepAnalysis) -> &'static str {
    if a.notes.iter().any(|n| n.contains("went past saturation")) {
        "went past it (see the notes)"
    } else if a.notes.iter().any(|n| n.contains("reached saturation cannot be told")) {
        "cannot be told (see the notes)"
    } else {
        "not reached"
    }
}

/// Past a knee the server gains little from more load: each request in
/// flight beyond the knee adds at most [`KNEE_SLOPE_RATIO`] of the
/// throughput one added up to it. Kneedle alone names the point farthest
/// above the chord, and a curve still nearly straight has one: 1, 4, 8 and
/// 16 users at 119, 453, 854 and 1,534 tokens/s had named 8 users, 56% of
/// the most measured, "saturation" (and the recommended load without an
/// SLO), where the same engine reached 5,896 at 256.
pub const KNEE_SLOPE_RATIO: f64 = 0.5;

/// Whether the curve `xy` (sorted by x) bends at `k` by [`KNEE_SLOPE_RATIO`]:
/// the slope from `k` to the last point against the slope from the first
/// point to `k`.
fn bends(xy: &[(f64, f64)], k: usize) -> bool {
    let (first, knee, last) = (xy[0], xy[k], xy[xy.len() - 1]);
    let slope = |a: (f64, f64), b: (f64, f64)| if b.0 > a.0 { Some((b.1 - a.1) / (b.0 - a.0)) } else { None };
    match (slope(first, knee), slope(knee, last)) {
        (Some(before), Some(after)) if before > 0.0 => after <= KNEE_SLOPE_RATIO * before,
        _ => true,
    }
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
    if let Some(n) = failures_note(points) {
        a.notes.push(n);
    }
    let axis = LoadAxis::of(points);
    let at = |i: usize| axis.at(&points[i]);
    let mut order: Vec<usize> =
        (0..points.len()).filter(|&i| points[i].result.summary.requests.completed > 0).collect();
    order.sort_by(|&x, &y| at(x).total_cmp(&at(y)));
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
    // Points whose window was too short to measure a rate (see the knee
    // below) are left out of the maxima too, unless no other point
    // completed a request: a 0.2 s window of one request had read as the
    // sweep's max throughput, ahead of the point of 1 req/s.
    let knee_order: Vec<usize> = order.iter().copied().filter(|&i| !too_short(&points[i].result)).collect();
    let rated: &[usize] = if knee_order.is_empty() { &order } else { &knee_order };
    let best = *rated.iter().max_by(|&&x, &&y| thr(x).total_cmp(&thr(y))).expect("not empty");
    a.max_throughput = Some(point_ref(best, &points[best]));
    // A point left out above it is named: its higher figure in the table
    // had gone unexplained beside "max throughput".
    let above: Vec<String> =
        order.iter().filter(|&&i| !rated.contains(&i) && thr(i) > thr(best)).map(|&i| points[i].load.label()).collect();
    if !above.is_empty() {
        a.notes.push(format!(
            "left out of max throughput, its window too short to measure a rate (the figure is the window's, \
             mostly ramp-up and drain): {}",
            above.join(", ")
        ));
    }

    // Saturation: the knee of output throughput against load (Kneedle: the
    // point farthest above the chord once both axes are scaled to 0..1),
    // provided TTFT climbs past it, so the extra load only queues. Not over
    // points whose window was too short to measure a rate: theirs is the
    // window's, not the load's (64 requests at 34 to 64 users had made a
    // flat knee at 34).
    // Points past capacity (overloaded, TTFT climbing) stay: they are the
    // knee's evidence; only windows too short to measure a rate go.
    let some_short = knee_order.len() < order.len();
    let found = knee_order.last().and_then(|&last| {
        let xy: Vec<(f64, f64)> = knee_order.iter().map(|&i| (intensity(&points[i]), thr(i))).collect();
        let k = knee(&xy)?;
        (knee_order[k] != last && ttft(last) >= 1.5 * ttft(knee_order[k]).max(1e-9) && bends(&xy, k))
            .then_some(knee_order[k])
    });
    // Where no knee was found, whether the sweep went past saturation
    // rather than short of it: every load beyond the server (its backlog
    // grew), or throughput at the highest load well below the best. "Did
    // not reach saturation" had been said of a sweep whose every point was
    // overloaded and whose throughput fell by half.
    // Over the points that measured a rate, or where none did, over them
    // all: a sweep whose every point was overloaded had its every window
    // too short to measure one (mostly ramp-up, the queue still growing)
    // and had said "did not reach saturation".
    let overloaded = |i: usize| points[i].result.summary.stability.as_ref().is_some_and(|s| s.overloaded);
    let measured = if some_short && !knee_order.is_empty() { "measured " } else { "" };
    match (found, rated.first(), rated.last()) {
        (Some(k), _, _) => a.saturation = Some(point_ref(k, &points[k])),
        (None, Some(&lo), Some(_)) if rated.iter().all(|&i| overloaded(i)) => a.notes.push(format!(
            "every {measured}load was beyond the server (its backlog grew): the sweep went past saturation, \
             which lies below the lowest, {}; add lower loads",
            points[lo].load.label()
        )),
        (None, _, Some(&hi)) if thr(hi) < 0.9 * thr(best) => a.notes.push(format!(
            "throughput fell from {:.1} at {} to {:.1} at the highest {}load, {}: the sweep went past saturation \
             without placing its knee; add loads at and below {}",
            thr(best),
            points[best].load.label(),
            thr(hi),
            measured,
            points[hi].load.label(),
            points[best].load.label()
        )),
        // The highest loads failed (a server that died mid-sweep): whether
        // it saturated cannot be told ("did not reach saturation" had been
        // the only word on a dead server).
        (None, _, Some(&hi)) if failing_from(points, axis, at(hi)) => a.notes.push(
            "requests failed at the highest loads (10% or more of them): whether the sweep reached saturation \
             cannot be told"
                .into(),
        ),
        // Every window too short to measure a rate: their throughputs are
        // the windows', so neither a rise nor a knee says anything.
        (None, _, _) if knee_order.is_empty() => a.notes.push(
            "every point's window was too short to measure its rate (see each point's summary.stability.reason): \
             whether the sweep reached saturation cannot be told; run longer points (--duration, --requests)"
                .into(),
        ),
        (None, _, _) => a.notes.push(format!(
            "throughput was still rising, or {} flat, at the highest {}load: the sweep did not reach saturation",
            if pooled { "E2E" } else { "TTFT" },
            measured
        )),
    }

    let judged: Vec<usize> = order.iter().copied().filter(|&i| points[i].result.slo.is_some()).collect();
    if !judged.is_empty() {
        let goodput = |i: usize| {
            let g = points[i].result.summary.goodput.as_ref();
            g.map_or(0.0, |g| if pooled { g.requests_per_s } else { g.output_tokens_per_s })
        };
        // The most goodput over the steady points, as the recommendation
        // (a window too short to measure a rate is not steady either), and
        // none named where every steady point's is 0: an overload whose
        // 256-in-flight cap held back most sends had been the sweep's max
        // goodput beside its NOT STEADY mark. Where only points that were
        // not steady had goodput, a note says so.
        let best_of = |pool: &mut dyn Iterator<Item = usize>| {
            pool.max_by(|&x, &y| goodput(x).total_cmp(&goodput(y))).filter(|&g| goodput(g) > 0.0)
        };
        match best_of(&mut judged.iter().copied().filter(|&i| steady(&points[i].result))) {
            Some(g) => a.max_goodput = Some(point_ref(g, &points[g])),
            None => {
                if let Some(g) = best_of(&mut judged.iter().copied()) {
                    a.notes.push(format!(
                        "no steady point had goodput, so there is no max goodput: the most, at {}, was not a \
                         steady state (its summary.stability.reason says why); run longer points (--duration) or \
                         lower loads",
                        points[g].load.label()
                    ));
                }
            }
        }
        let meeting: Vec<usize> = judged
            .iter()
            .copied()
            .filter(|&i| meets_slo(&points[i].result, attainment_target) == Some(true) && steady(&points[i].result))
            .collect();
        if let Some(&hi) = meeting.iter().max_by(|&&x, &&y| at(x).total_cmp(&at(y))) {
            a.highest_load_meeting_slo = Some(point_ref(hi, &points[hi]));
            // Among the points that meet the SLO, the one with the most
            // goodput (so the cheapest per good token).
            let rec = *meeting.iter().max_by(|&&x, &&y| goodput(x).total_cmp(&goodput(y))).expect("not empty");
            a.recommended = Some(point_ref(rec, &points[rec]));
            // An SLO of objectives alone judges no attainment ([`meets_slo`]).
            let share = points[rec]
                .result
                .slo
                .as_ref()
                .and_then(|s| s.attainment.as_ref())
                .map_or(String::new(), |_| format!(" with at least {:.0}% attainment", attainment_target * 100.0));
            a.recommendation = Some(format!(
                "{}: the most goodput among the loads that meet every SLO objective{share}",
                points[rec].load.label()
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
    // Every point, those that completed no request included (they measured
    // nothing, and had been left out of the list).
    let mut all: Vec<usize> = (0..points.len()).collect();
    all.sort_by(|&x, &y| at(x).total_cmp(&at(y)));
    let unsteady: Vec<String> =
        all.iter().filter(|&&i| !steady(&points[i].result)).map(|&i| points[i].load.label()).collect();
    if !unsteady.is_empty() {
        a.notes.push(format!(
            "not steady, so never recommended nor counted as max goodput: {} (each point's \
             summary.stability.reason says why)",
            unsteady.join(", ")
        ));
    }
    a
}

#[cfg(test)]
mod tests {
    /// A huge rate reads as a number with its thousands marked, and one no
    /// server meets (or `inf`) in words: never in exponent form.
    #[test]
    fn huge_rates_are_labelled_in_words_or_grouped_digits() {
        assert_eq!(Load::Rate(1e6).label(), "1,000,000 req/s");
        assert_eq!(Load::Rate(1_234_567.8).label(), "1,234,568 req/s");
        assert_eq!(Load::Rate(999_999_999_999.0).label(), "999,999,999,999 req/s");
        assert_eq!(Load::Rate(UNLIMITED_RATE).label(), "unlimited rate");
        assert_eq!(Load::Rate(f64::INFINITY).label(), "unlimited rate");
        assert_eq!(Load::Rate(12.5).label(), "12.5 req/s");
        for r in [1e6, 1e9, 3.5e11, 1e12, 1e300, f64::INFINITY] {
            let label = Load::Rate(r).label();
            let exponent = label.as_bytes().windows(2).any(|w| w[0].is_ascii_digit() && w[1] == b'e');
            assert!(!exponent, "{r}: {label}");
        }
    }
    use super::*;
    use crate::analysis::assemble::{assemble, Assembly};
    use crate::analysis::stability::{no_completions, Stability};
    use crate::{AnalysisOptions, RunConfig};

    /// A point at `load` with `tok_s` output tokens/s, `sent` measured
    /// requests of which `failed` failed and the rest completed, and the
    /// verdict `st`.
    fn pt(load: Load, tok_s: f64, sent: u64, failed: u64, st: Option<Stability>) -> SweepPoint {
        let a = Assembly {
            tool: Tool { name: "goodput".into(), version: "0".into(), commit: None },
            kind: "bench",
            run_id: String::new(),
            started_unix_s: 0.0,
            interrupted: false,
            config: RunConfig::default(),
            target: Target::default(),
            include_requests: false,
        };
        let mut result = assemble(a, &[], &AnalysisOptions::default());
        let s = &mut result.summary;
        s.throughput.output_tokens_per_s = tok_s;
        s.tokens.output = 1 + tok_s as u64;
        s.requests.sent = sent;
        s.requests.failed = failed;
        s.requests.completed = sent - failed;
        if failed > 0 {
            s.requests.errors_by_kind.insert("connect".into(), failed);
        }
        s.stability = st;
        SweepPoint { load, origin: "grid".into(), result }
    }

    fn steady_verdict() -> Option<Stability> {
        Some(Stability { steady: true, ..Stability::default() })
    }

    fn overloaded() -> Option<Stability> {
        Some(Stability { steady: false, overloaded: true, reason: Some("backlog".into()), ..Stability::default() })
    }

    /// With an SLO judged, goodput `g` tok/s.
    fn judged(mut p: SweepPoint, g: f64) -> SweepPoint {
        let slo = serde_json::json!({"spec": "e2e:p95<=1.5s", "limits": [], "objectives": [], "pass": false});
        p.result.slo = Some(serde_json::from_value(slo).unwrap());
        p.result.summary.goodput = Some(crate::analysis::slo::Goodput { output_tokens_per_s: g, ..Default::default() });
        p
    }

    /// A sweep's points are judged by its own attainment target, as its
    /// analysis judged them (session 44: the exports had used 0.9 whatever
    /// `--attainment` said); a document without one reads as 0.9.
    #[test]
    fn a_point_is_judged_by_the_sweeps_own_attainment_target() {
        let mut p = judged(pt(Load::Concurrency(8), 100.0, 10, 0, steady_verdict()), 76.0);
        // An SLO of objectives alone judges no attainment: it meets by its
        // percentiles whatever share met every threshold (a p50 objective
        // had been held to 90% of the requests within its limit).
        p.result.slo.as_mut().unwrap().pass = true;
        p.result.summary.goodput.as_mut().unwrap().slo_attainment = 0.76;
        assert_eq!(meets_slo(&p.result, DEFAULT_ATTAINMENT_TARGET), Some(true));
        // Limits judged at the sweep's --attainment 0.5: 76% met them.
        let slo = p.result.slo.as_mut().unwrap();
        slo.limits = vec!["e2e<=1.5s".into()];
        slo.attainment = Some(crate::analysis::slo::AttainmentResult {
            target: 0.5,
            measured: 0.76,
            good_requests: 76,
            judged_requests: 100,
            pass: true,
            by_limits: false,
        });
        let mut sw = SweepResult {
            schema: crate::SCHEMA.into(),
            tool: p.result.tool.clone(),
            kind: "sweep".into(),
            started_unix_s: 0.0,
            interrupted: false,
            config: SweepConfig::default(),
            target: Target::default(),
            points: Vec::new(),
            analysis: SweepAnalysis::default(),
        };
        sw.points.push(p);
        assert_eq!((sw.attainment_target(), sw.point_meets_slo(0)), (DEFAULT_ATTAINMENT_TARGET, Some(false)));
        sw.config.attainment_target = 0.5;
        assert_eq!((sw.attainment_target(), sw.point_meets_slo(0)), (0.5, Some(true)));
        let a = analyze_sweep(&sw.points, sw.attainment_target());
        assert_eq!(a.recommended.map(|r| r.index), Some(0), "the analysis agrees");
        assert_eq!(sw.point_meets_slo(1), None, "no such point");
    }

    #[test]
    fn points_with_failures_are_named_with_their_share() {
        let pts = [
            pt(Load::Rate(2.0), 60.0, 20, 0, steady_verdict()),
            pt(Load::Rate(4.0), 100.0, 42, 11, steady_verdict()),
            pt(Load::Rate(6.0), 0.0, 53, 53, Some(no_completions(53, 53, 0, true))),
        ];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        let n = a.notes.iter().find(|n| n.starts_with("requests failed at")).expect("a failures note");
        assert!(n.contains("4 req/s (11 of 42, 26%: 11 connect)"), "{n}");
        assert!(n.contains("6 req/s (53 of 53, 100%"), "{n}");
        assert!(!n.contains("2 req/s"), "{n}");
        // Failing at the top: saturation cannot be told, not "not reached".
        assert!(a.notes.iter().all(|n| !n.contains("did not reach saturation")), "{:?}", a.notes);
        assert!(a.notes.iter().any(|n| n.contains("cannot be told")), "{:?}", a.notes);
    }

    #[test]
    fn a_point_with_no_completed_requests_is_listed_not_steady() {
        let pts = [
            pt(Load::Rate(2.0), 60.0, 20, 0, steady_verdict()),
            pt(Load::Rate(4.0), 100.0, 40, 0, steady_verdict()),
            pt(Load::Rate(10.0), 0.0, 0, 0, Some(no_completions(0, 0, 0, true))),
        ];
        assert!(!steady(&pts[2].result));
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        let n = a.notes.iter().find(|n| n.starts_with("not steady")).expect("a not-steady note");
        assert!(n.contains("10 req/s") && !n.contains("4 req/s"), "{n}");
        let v = no_completions(187, 0, 187, true);
        assert!(!v.steady && v.reason.as_deref().unwrap().starts_with("no completed requests"));
        // A document's point without a verdict that completed nothing is
        // not steady either.
        assert!(!steady(&pt(Load::Rate(1.0), 0.0, 5, 5, None).result));
    }

    /// A curve still nearly straight has a Kneedle point but no bend: 1, 4,
    /// 8 and 16 users at 119, 453, 854 and 1,534 tokens/s (the eight past
    /// the knee added 85 tokens/s each, against 105 before it) had named 8
    /// users saturation. A curve that flattens bends.
    #[test]
    fn a_knee_needs_the_curve_to_bend() {
        let straight = [(1.0, 118.6), (4.0, 452.9), (8.0, 854.2), (16.0, 1534.0)];
        let k = knee(&straight).unwrap();
        assert_eq!(k, 2, "Kneedle names the 8 users");
        assert!(!bends(&straight, k));
        let flat = [(1.0, 118.6), (4.0, 452.9), (8.0, 854.2), (16.0, 1000.0), (32.0, 1020.0)];
        let k = knee(&flat).unwrap();
        assert!(bends(&flat, k), "knee at {k}");
    }

    #[test]
    fn every_point_overloaded_and_throughput_falling_is_past_saturation() {
        let pts = [
            judged(pt(Load::Rate(14.0), 299.5, 100, 0, overloaded()), 0.0),
            judged(pt(Load::Rate(18.0), 147.8, 120, 0, overloaded()), 0.0),
        ];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert!(a.notes.iter().all(|n| !n.contains("did not reach saturation")), "{:?}", a.notes);
        assert!(a.notes.iter().any(|n| n.contains("went past saturation") && n.contains("14 req/s")), "{:?}", a.notes);
        // Every goodput is 0: no max-goodput point.
        assert_eq!(a.max_goodput, None);
        // Falling without every point overloaded: past saturation too.
        let pts =
            [pt(Load::Rate(2.0), 298.0, 100, 0, steady_verdict()), pt(Load::Rate(4.0), 77.0, 100, 0, overloaded())];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert!(a.notes.iter().any(|n| n.contains("throughput fell from 298.0 at 2 req/s")), "{:?}", a.notes);
        // Rising: not reached, as before.
        let pts = [
            pt(Load::Rate(2.0), 100.0, 100, 0, steady_verdict()),
            pt(Load::Rate(4.0), 200.0, 100, 0, steady_verdict()),
        ];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert!(a.notes.iter().any(|n| n.contains("did not reach saturation")), "{:?}", a.notes);
    }

    /// A sweep of both kinds (`--auto`) orders its points by requests per
    /// second: concurrency 8 sustaining 40 req/s is a higher load than
    /// 33.8 req/s (compared as 8 against 33.8, the rate had read as the
    /// highest load meeting the SLO, and its lower throughput as the sweep
    /// going past saturation).
    #[test]
    fn points_of_both_kinds_are_ordered_by_requests_per_second() {
        let at = |load: Load, rps: f64, tok_s: f64| {
            let mut p = judged(pt(load, tok_s, 100, 0, steady_verdict()), tok_s);
            p.result.summary.throughput.requests_per_s = rps;
            p.result.slo.as_mut().unwrap().pass = true;
            p.result.summary.goodput.as_mut().unwrap().slo_attainment = 1.0;
            p
        };
        let pts = [
            at(Load::Concurrency(1), 5.0, 100.0),
            at(Load::Concurrency(8), 40.0, 700.0),
            at(Load::Rate(33.774), 33.7, 600.0),
        ];
        assert_eq!(LoadAxis::of(&pts), LoadAxis::Mixed);
        assert_eq!(LoadAxis::Mixed.at(&pts[1]), 40.0);
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert_eq!(a.highest_load_meeting_slo.as_ref().map(|p| p.index), Some(1));
        assert!(a.notes.iter().all(|n| !n.contains("went past saturation")), "{:?}", a.notes);
        assert_eq!(saturation_unplaced(&a), "not reached");
        // One kind: the load's own value.
        assert_eq!(LoadAxis::of(&pts[..2]), LoadAxis::Concurrency);
        assert_eq!(LoadAxis::Concurrency.at(&pts[1]), 8.0);
        assert_eq!(LoadAxis::of(&pts[2..]), LoadAxis::Rate);
    }

    /// A sweep whose every point was overloaded, each window too short to
    /// measure a rate, went past saturation (it had said "did not reach
    /// saturation"); one whose every window was too short otherwise cannot
    /// tell. The saturation card's words agree with the note.
    #[test]
    fn every_point_too_short_and_overloaded_is_past_saturation_else_cannot_be_told() {
        let short = |overloaded: bool| {
            Some(Stability {
                steady: false,
                overloaded,
                transient_share: 0.8,
                reason: Some("arrivals 100.0 req/s, completions 72.0 req/s".into()),
                ..Stability::default()
            })
        };
        let pts: Vec<SweepPoint> =
            [100.0, 150.0, 200.0].iter().map(|&r| pt(Load::Rate(r), 9000.0, 3000, 0, short(true))).collect();
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert!(a.notes.iter().all(|n| !n.contains("did not reach saturation")), "{:?}", a.notes);
        let past = a.notes.iter().find(|n| n.contains("went past saturation")).expect("a past-saturation note");
        assert!(past.starts_with("every load was beyond the server") && past.contains("100 req/s"), "{past}");
        assert_eq!(saturation_unplaced(&a), "went past it (see the notes)");
        let pts: Vec<SweepPoint> =
            [1.0, 2.0, 3.0].iter().map(|&r| pt(Load::Rate(r), 100.0 * r, 30, 0, short(false))).collect();
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert!(a.notes.iter().any(|n| n.contains("reached saturation cannot be told")), "{:?}", a.notes);
        assert_eq!(saturation_unplaced(&a), "cannot be told (see the notes)");
    }

    #[test]
    fn max_throughput_and_goodput_leave_out_windows_too_short_to_measure_a_rate() {
        let short = Some(Stability {
            steady: false,
            reason: Some("1 measured requests are too few".into()),
            ..Stability::default()
        });
        let pts = [
            judged(pt(Load::Rate(1e-9), 32.6, 1, 0, short), 32.6),
            judged(pt(Load::Rate(1.0), 8.0, 30, 0, steady_verdict()), 8.0),
        ];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert_eq!(a.max_throughput.as_ref().map(|p| p.index), Some(1));
        assert_eq!(a.max_goodput.as_ref().map(|p| p.index), Some(1));
        // The higher figure left out is named (it had gone unexplained).
        let note = a.notes.iter().find(|n| n.starts_with("left out of max throughput")).expect("a note");
        assert!(note.ends_with(&pts[0].load.label()), "{note}");
        // Only short windows: the best of them all the same for throughput;
        // none for goodput (a short window is not steady), and a note says why.
        let a = analyze_sweep(&pts[..1], DEFAULT_ATTAINMENT_TARGET);
        assert_eq!(a.max_throughput.as_ref().map(|p| p.index), Some(0));
        assert_eq!(a.max_goodput, None);
        assert!(a.notes.iter().any(|n| n.starts_with("no steady point had goodput")), "{:?}", a.notes);
    }

    /// Max goodput, as the recommendation, is never a point that is not
    /// steady: an overload whose cap held back most sends had been the
    /// sweep's max goodput at 68.423 req/s beside its NOT STEADY mark.
    #[test]
    fn max_goodput_skips_points_that_are_not_steady() {
        let unsteady = Some(Stability {
            steady: false,
            reason: Some("arrivals 68.4 req/s, completions 66.9 req/s".into()),
            ..Stability::default()
        });
        let pts = [
            judged(pt(Load::Rate(60.0), 7000.0, 600, 0, steady_verdict()), 7000.0),
            judged(pt(Load::Rate(68.0), 8500.0, 680, 0, unsteady.clone()), 8500.0),
        ];
        let a = analyze_sweep(&pts, DEFAULT_ATTAINMENT_TARGET);
        assert_eq!(a.max_goodput.as_ref().map(|p| p.index), Some(0));
        let n = a.notes.iter().find(|n| n.starts_with("not steady")).expect("a not-steady note");
        assert!(n.contains("nor counted as max goodput: 68 req/s"), "{n}");
        // Only the unsteady point had goodput: none is named, and a note
        // says the most was at a point that was not steady.
        let a = analyze_sweep(&pts[1..], DEFAULT_ATTAINMENT_TARGET);
        assert_eq!(a.max_goodput, None);
        let n = a.notes.iter().find(|n| n.starts_with("no steady point had goodput")).expect("a note");
        assert!(n.contains("at 68 req/s"), "{n}");
    }
}
