//! A frontier: several server configurations, each at rising load, set on
//! one plane (output tokens/s per GPU against tokens/s per user), with the
//! Pareto frontier across all their points, the point with the most good
//! tokens per dollar within the SLO, and why each configuration with no
//! point on the frontier lost. The same document holds a predicted frontier
//! (`goodput plan`, the simulated engine in virtual time) and a measured one
//! (`goodput sweep --serve-grid`, real servers), so one chart can draw both.

use crate::doc::config::{Extra, SessionsConfig, WorkloadConfig};
use crate::doc::result::Tool;
use crate::doc::sweep::Load;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A configuration's settings, name → value as text, in the order they were
/// given (a grid file's, as written): the JSON object keeps that order.
/// Two are equal when they hold the same pairs, in whatever order.
pub type ParamMap = indexmap::IndexMap<String, String>;

/// How the note on a prediction's TTFT accuracy begins (`goodput-sim`'s
/// `accuracy::ttft_note`): the HTML's TTFT tile points to it when the
/// notes hold it.
pub const TTFT_ACCURACY_NOTE: &str = "accuracy: TTFT under load";

/// Where a frontier's points come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FrontierSource {
    /// The simulated engine in virtual time (`goodput plan`).
    Predicted,
    /// Real servers, started and swept (`goodput sweep --serve-grid`).
    Measured,
}

impl FrontierSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FrontierSource::Predicted => "predicted",
            FrontierSource::Measured => "measured",
        }
    }
}

/// Whether a configuration ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ConfigStatus {
    Ok,
    /// It did not start, never became ready, crashed, or (predicted) does
    /// not fit: `error` says why, and a measured one's `exit_status` and
    /// `log_tail` show what the server said.
    Failed,
}

/// One configuration: a server's settings on some GPUs, and its points at
/// rising load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FrontierConfig {
    /// Short and unique within the document (`h100x2 tp2 fp8 seqs256`, or
    /// the grid's parameters), the label a chart puts on its points.
    pub id: String,
    /// The settings, name → value as text (`tp` → `2`, `max_num_seqs` →
    /// `256`): the plan's knobs, or the grid's parameters.
    pub params: ParamMap,
    /// The GPU type, as the catalog names it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// GPUs the configuration occupies (all replicas).
    pub gpus: u32,
    /// Price of one GPU-hour in USD, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour_usd: Option<f64>,
    pub status: ConfigStatus,
    /// Why a failed configuration failed, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A measured server's exit status, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    /// The last lines of a measured server's log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
    /// Why this configuration has no point on the frontier (filled by
    /// [`analyze_frontier`]); absent for one that has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dominated: Option<String>,
    /// A measured configuration whose server exited in the midst of its
    /// sweep: the load of the point it exited during. That point is not
    /// done (no figure of it is kept), and `--resume` runs the
    /// configuration again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited_during: Option<Load>,
    /// A configuration that ran no point of its own because its points are
    /// another's (`goodput plan`: a batch limit that only cuts a wider
    /// limit's curve short, or a curve the same as an earlier one's, point
    /// for point): that configuration's id. Its `points` are
    /// then empty and its `dominated` says which of the other's it shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points_of: Option<String>,
    /// How to start this configuration on a real server, to measure what
    /// was predicted (`goodput plan`; absent on a measured frontier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serve_command: Option<ServeCommand>,
    /// In the order of rising load.
    #[serde(default)]
    pub points: Vec<FrontierPoint>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// A predicted configuration as a server's command line, or as a script
/// where it runs as several servers behind a router (prefill apart from
/// decode; replicas behind the plan's router); or why the server has none (a
/// width with no checkpoint known, drafts with no drafter known, a layout
/// the server does not take).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ServeCommand {
    /// The server it is written for: `vllm`, `sglang`, `trtllm`
    /// (TensorRT-LLM's `trtllm-serve`), or `goodput` (`goodput serve`'s
    /// simulated engine).
    pub server: String,
    /// The command, with no address (`--host` and `--port` are the
    /// caller's): `vllm serve meta-llama/Llama-3.1-70B-Instruct
    /// --served-model-name llama-3.1-70b --tensor-parallel-size 2 …`, or
    /// `python3 -m sglang.launch_server --model-path … --tp-size 2 …`.
    /// Where `script` is true: a POSIX sh script, several lines, that
    /// starts every server on GPUs of its own and the router in front,
    /// which listens on `$PORT` (8000 when unset) on 127.0.0.1, the
    /// servers on the ports after it; the script ends when any of them
    /// does. TensorRT-LLM's is always a script: it writes the options
    /// `trtllm-serve` takes from a file (`--config`) first, and one server
    /// listens on `$PORT` itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Whether `command` is a script (several servers, or TensorRT-LLM's
    /// options file first) rather than one command line.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub script: bool,
    /// Why there is no command, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

impl ServeCommand {
    /// The server as prose names it: `vLLM`, `SGLang` (another as the
    /// document names it).
    pub fn server_title(&self) -> &str {
        match self.server.as_str() {
            "vllm" => "vLLM",
            "sglang" => "SGLang",
            "trtllm" => "TensorRT-LLM",
            "goodput" => "goodput serve",
            other => other,
        }
    }
}

impl FrontierConfig {
    /// A configuration that ran (status `ok`), with no points yet.
    pub fn new(
        id: String,
        params: ParamMap,
        gpu: Option<String>,
        gpus: u32,
        gpu_hour_usd: Option<f64>,
    ) -> FrontierConfig {
        FrontierConfig {
            id,
            params,
            gpu,
            gpus,
            gpu_hour_usd,
            status: ConfigStatus::Ok,
            error: None,
            exit_status: None,
            log_tail: None,
            dominated: None,
            exited_during: None,
            points_of: None,
            serve_command: None,
            points: Vec::new(),
            extra: Extra::default(),
        }
    }

    /// What an hour of the configuration costs, when its price is known.
    pub fn usd_per_hour(&self) -> Option<f64> {
        self.gpu_hour_usd.map(|p| p * f64::from(self.gpus))
    }

    /// Output tokens one dollar buys at a point of this configuration
    /// (output tokens/s × 3600 / its price per hour), when it has a price.
    pub fn tokens_per_usd(&self, p: &FrontierPoint) -> Option<f64> {
        let u = self.usd_per_hour().filter(|u| *u > 0.0 && u.is_finite())?;
        let v = p.output_tokens_per_s * 3600.0 / u;
        v.is_finite().then_some(v)
    }
}

/// One load of one configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FrontierPoint {
    pub load: Load,
    /// Output tokens per second, all GPUs of the configuration together.
    pub output_tokens_per_s: f64,
    /// The same per GPU: the frontier's y.
    pub output_tokens_per_s_per_gpu: f64,
    /// 1000 / TPOT (at the document's `percentile`): the speed one user
    /// sees, the frontier's x. Absent when no request gave a TPOT.
    pub tokens_per_s_per_user: Option<f64>,
    /// TTFT and TPOT at the document's `percentile`.
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    /// Output tokens/s of the requests that met the SLO (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_tokens_per_s: Option<f64>,
    /// Every objective passed and attainment reached its target (absent
    /// without an SLO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meets_slo: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usd_per_million_output_tokens: Option<f64>,
    /// Energy per output token, from a power model (predicted) or the
    /// GPUs' energy counters (measured), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_output_token: Option<f64>,
    /// Output tokens/s per provisioned megawatt (TDP × GPUs), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_per_s_per_mw: Option<f64>,
    /// Requests completed and failed at this point.
    #[serde(default)]
    pub completed: u64,
    #[serde(default)]
    pub failed: u64,
    /// False when the point did not reach a steady state (absent when not judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<bool>,
    /// How the client itself stalled while this point's requests were due
    /// or in flight (measured; their times are then bounds, not the
    /// server's): what `--fail-on-unsteady` fails a sweep of servers for,
    /// as it fails a plain sweep's point. Absent when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_stalled: Option<String>,
    /// Where the configuration drafts (speculative decoding): how its drafts
    /// fared, from the server's counters (measured) or the engine's draws
    /// (predicted). Absent where nothing drafted, or nothing counted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<PointSpecDecode>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// How a point's drafts fared.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PointSpecDecode {
    /// The share of speculative steps whose first draft token was accepted:
    /// what `--spec-acceptance` takes (vLLM's per-position counter over its
    /// proposals; the engine's draws). Absent where not counted (SGLang's
    /// gauges give no positions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_acceptance: Option<f64>,
    /// Tokens a speculative step yields per sequence, the bonus token
    /// included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_accepted_length: Option<f64>,
}

impl PointSpecDecode {
    /// A run's drafts: the server's counters over its window, else the
    /// simulated engine's; `None` where neither counted any.
    pub fn of(r: &crate::RunResult) -> Option<PointSpecDecode> {
        // The server's window and the engine's draws name them alike.
        let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
        let of = |by_position: &[f64], length: Option<f64>| PointSpecDecode {
            first_acceptance: finite(by_position.first().copied()),
            mean_accepted_length: finite(length),
        };
        let measured = r.server_signals.as_ref().and_then(|s| s.window.spec_decode.as_ref());
        let predicted = r.engine.as_ref().and_then(|e| e.spec_decode.as_ref());
        measured
            .map(|sd| of(&sd.acceptance_by_position, sd.mean_accepted_length))
            .or_else(|| predicted.map(|sd| of(&sd.acceptance_by_position, sd.mean_accepted_length)))
            .filter(|p| p.first_acceptance.is_some() || p.mean_accepted_length.is_some())
    }
}

/// A point of the document: the configuration's index in `configs` and the
/// point's in its `points`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PointId {
    pub config: usize,
    pub point: usize,
}

/// The point to run, and what it gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct BestPoint {
    pub at: PointId,
    /// Good output tokens per USD (goodput × 3600 / the configuration's
    /// price per hour); absent when a configuration has no price, and the
    /// best is then chosen by good tokens/s per GPU. Without an SLO every
    /// output token counts as good (the points' goodput is then `null`, and
    /// their output tokens/s stand in): output tokens per USD, which the
    /// reason names so.
    pub good_tokens_per_usd: Option<f64>,
    /// Why this one, in words.
    pub reason: String,
}

/// A point's field (in its `extra`), where a router decides what the prefix
/// caches hold (`plan` of sessions or of a trace): the share of its prompt
/// tokens they served.
pub const PREFIX_CACHE_HIT_RATE: &str = "prefix_cache_hit_rate";

/// One frontier document (`kind` `frontier`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FrontierResult {
    /// `goodput/v1`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = crate::SCHEMA)))]
    pub schema: String,
    pub tool: Tool,
    /// `frontier`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "frontier")))]
    pub kind: String,
    pub source: FrontierSource,
    pub started_unix_s: f64,
    /// Stopped before every configuration ran.
    #[serde(default)]
    pub interrupted: bool,
    /// The model served.
    pub model: String,
    pub workload: WorkloadConfig,
    /// Multi-turn sessions (`--turns`, `--think-time`): each user held one
    /// conversation at a time, each turn sending it so far; a load's users
    /// are those users, and its requests counted sessions. Absent for
    /// single requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionsConfig>,
    /// The SLO as text (`ttft:p95<=500ms,tpot:p95<=50ms`), when given.
    pub slo: Option<String>,
    /// Attainment a point must reach, beside passing every objective, to
    /// count as meeting the SLO.
    pub attainment_target: f64,
    /// The percentile TTFT, TPOT and tokens/s per user are given at: the
    /// SLO's TPOT objective's, else its TTFT objective's, else 50.
    pub percentile: f64,
    pub configs: Vec<FrontierConfig>,
    /// The Pareto frontier of every point of the configurations that ran
    /// (more output tokens/s per GPU and more tokens/s per user are
    /// better), in the order of rising tokens/s per user.
    pub frontier: Vec<PointId>,
    /// The Pareto frontier of output tokens per dollar against tokens/s per
    /// user, over the same points, in the order of rising tokens/s per
    /// user: a cheaper GPU that loses per GPU can be on it, the cheapest
    /// per token at its speed. Empty (left out) unless every configuration
    /// that ran has a price per GPU-hour and they are not all one (with
    /// one price it is the per-GPU frontier).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frontier_per_usd: Vec<PointId>,
    /// The most good tokens per dollar among the points that meet the SLO
    /// (every point, without one); absent when none does.
    pub best: Option<BestPoint>,
    pub notes: Vec<String>,
    /// The GPU types (as the configurations' `gpu` names them) whose family
    /// no public measurement has calibrated: the engine runs them on
    /// another family's constants, so their points, and how they stand
    /// against the others', can be far off (a predicted frontier; the notes
    /// say more). Empty (left out) when there is none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncalibrated_gpus: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl FrontierResult {
    /// A frontier of no configuration yet, started at 0 on no model,
    /// workload or SLO: the fields the others are set from, whatever the
    /// source (`FrontierResult { configs, ..FrontierResult::new(…) }`).
    pub fn new(tool: Tool, source: FrontierSource, attainment_target: f64, percentile: f64) -> FrontierResult {
        FrontierResult {
            schema: crate::SCHEMA.into(),
            tool,
            kind: "frontier".into(),
            source,
            started_unix_s: 0.0,
            interrupted: false,
            model: String::new(),
            workload: WorkloadConfig::default(),
            sessions: None,
            slo: None,
            attainment_target,
            percentile,
            configs: Vec::new(),
            frontier: Vec::new(),
            frontier_per_usd: Vec::new(),
            best: None,
            notes: Vec::new(),
            uncalibrated_gpus: Vec::new(),
            extra: Extra::new(),
        }
    }

    /// The configuration runs on a GPU type of `uncalibrated_gpus`.
    pub fn uncalibrated(&self, c: &FrontierConfig) -> bool {
        c.gpu.as_deref().is_some_and(|g| self.uncalibrated_gpus.iter().any(|u| u == g))
    }

    pub fn point(&self, id: PointId) -> Option<&FrontierPoint> {
        self.configs.get(id.config)?.points.get(id.point)
    }

    /// Every point of the configurations that ran, with its id.
    pub fn points(&self) -> impl Iterator<Item = (PointId, &FrontierPoint)> {
        self.configs
            .iter()
            .enumerate()
            .filter(|(_, c)| c.status == ConfigStatus::Ok)
            .flat_map(|(ci, c)| c.points.iter().enumerate().map(move |(pi, p)| (PointId { config: ci, point: pi }, p)))
    }
}

/// `a` dominates `b`: at least as good on both axes (x, y, higher is
/// better) and better on one.
pub fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// Two points within this share of each other on both axes are one point
/// on a frontier: the engine's own error is about 10 %, and a measured
/// point's noise more than 0.1 %, so such a difference tells nothing, and
/// both had been drawn and listed (Qwen3-30B-A3B's 2,048- and 8,192-token
/// budgets at 660 tok/s/GPU and 166.9 tok/s/user, 0.04 % apart).
pub const TIE: f64 = 1e-3;

/// `a` and `b` are one point on a frontier: within [`TIE`] on both axes.
pub fn ties(a: (f64, f64), b: (f64, f64)) -> bool {
    let near = |u: f64, v: f64| (u - v).abs() <= TIE * u.abs().max(v.abs());
    near(a.0, b.0) && near(a.1, b.1)
}

/// The indices of the Pareto frontier of `xy` (both axes to maximise), in
/// the order of rising x (falling y). Points with a coordinate that is not
/// finite are left out. Of points on it that [`ties`] joins (equal ones
/// among them), the first in `xy` is kept: none dominates another, and
/// one is drawn.
pub fn pareto(xy: &[(f64, f64)]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for i in pareto_exact(xy) {
        match out.last_mut() {
            Some(last) if ties(xy[*last], xy[i]) => *last = (*last).min(i),
            _ => out.push(i),
        }
    }
    out
}

/// [`pareto`] with every point kept that nothing dominates.
fn pareto_exact(xy: &[(f64, f64)]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..xy.len()).filter(|&i| xy[i].0.is_finite() && xy[i].1.is_finite()).collect();
    // By x falling, then y falling: a point is on the frontier when its y
    // is at least the best y seen so far among points of larger x, and
    // strictly more when that best came from a larger x.
    order.sort_by(|&a, &b| xy[b].0.total_cmp(&xy[a].0).then(xy[b].1.total_cmp(&xy[a].1)));
    let mut out = Vec::new();
    let mut best_y = f64::NEG_INFINITY;
    let mut best_at: Option<(f64, f64)> = None;
    for i in order {
        let p = xy[i];
        let keep = match best_at {
            None => true,
            Some(q) => !dominates(q, p) && p.1 >= best_y,
        };
        if keep {
            out.push(i);
            if p.1 > best_y || best_at.is_none() {
                best_y = p.1;
                best_at = Some(p);
            }
        }
    }
    out.reverse();
    out
}

/// The point's place on the plane: (tokens/s per user, output tokens/s per
/// GPU), when it has both.
pub fn plane(p: &FrontierPoint) -> Option<(f64, f64)> {
    let x = p.tokens_per_s_per_user?;
    let y = p.output_tokens_per_s_per_gpu;
    (x.is_finite() && y.is_finite()).then_some((x, y))
}

/// The point's place on the per-dollar plane: (tokens/s per user, output
/// tokens per dollar), when it has both.
pub fn plane_per_usd(doc: &FrontierResult, id: PointId) -> Option<(f64, f64)> {
    let p = doc.point(id)?;
    let x = p.tokens_per_s_per_user.filter(|x| x.is_finite())?;
    Some((x, doc.configs[id.config].tokens_per_usd(p)?))
}

/// Every configuration that ran has a price per GPU-hour, and not all the
/// same one: the per-dollar frontier is drawn. (With one price, tokens per
/// dollar are tokens/s per GPU times a constant, and the per-dollar
/// frontier is the per-GPU one.)
pub fn priced_apart(doc: &FrontierResult) -> bool {
    let ran: Vec<&FrontierConfig> = doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok).collect();
    let priced = ran.iter().all(|c| c.usd_per_hour().is_some_and(|u| u > 0.0 && u.is_finite()));
    let first = ran.first().and_then(|c| c.gpu_hour_usd);
    priced && ran.iter().any(|c| c.gpu_hour_usd != first)
}

/// Fills the analysis of a document from its configurations and points:
/// `frontier`, `frontier_per_usd`, `best`, and each configuration's
/// `dominated` reason.
pub fn analyze_frontier(doc: &mut FrontierResult) {
    let ids: Vec<(PointId, (f64, f64))> = doc.points().filter_map(|(id, p)| plane(p).map(|xy| (id, xy))).collect();
    let xy: Vec<(f64, f64)> = ids.iter().map(|p| p.1).collect();
    doc.frontier = pareto(&xy).into_iter().map(|i| ids[i].0).collect();
    doc.frontier_per_usd = Vec::new();
    if priced_apart(doc) {
        let ids: Vec<(PointId, (f64, f64))> =
            doc.points().filter_map(|(id, _)| plane_per_usd(doc, id).map(|xy| (id, xy))).collect();
        let xy: Vec<(f64, f64)> = ids.iter().map(|p| p.1).collect();
        doc.frontier_per_usd = pareto(&xy).into_iter().map(|i| ids[i].0).collect();
    }
    doc.best = best_point(doc);
    let reasons = dominance_reasons(doc);
    for (c, r) in doc.configs.iter_mut().zip(reasons) {
        c.dominated = r;
    }
}

/// The point with the most good tokens per dollar among those that meet
/// the SLO (all points, without an SLO): goodput (output throughput without
/// an SLO) over the configuration's price per hour; by good tokens/s per
/// GPU when any configuration has no price. Ties go to the faster point per
/// user.
/// Why [`best_point`] found none, in a line with its fix: no point
/// completed a request, none met the SLO, or those that did were not steady
/// (a reason of its own: it had been told as "no point completed a
/// request" beside points that had).
pub fn no_best_reason(doc: &FrontierResult) -> &'static str {
    let judged = doc.slo.is_some();
    let candidates: Vec<&FrontierPoint> = doc
        .points()
        .map(|(_, p)| p)
        .filter(|p| if judged { p.meets_slo == Some(true) } else { p.meets_slo != Some(false) })
        .filter(|p| good_rate(p) > 0.0)
        .collect();
    match (candidates.is_empty(), judged) {
        (true, true) => "no point met the SLO: relax it, or offer more or faster GPUs",
        (true, false) => "no point completed a request",
        (false, true) => {
            "the points that met the SLO were not steady (each point's stability says why): give each point more \
             requests or a longer --duration"
        }
        (false, false) => {
            "no point was steady (each point's stability says why): give each point more requests or a longer \
             --duration"
        }
    }
}

/// Whether [`best_point`] ranks the document's points per dollar: every
/// configuration that ran has a price.
pub fn ranks_per_usd(doc: &FrontierResult) -> bool {
    doc.points().all(|(id, _)| doc.configs[id.config].usd_per_hour().is_some_and(|u| u > 0.0))
}

/// A point's good output tokens/s (every output token without an SLO).
fn good_rate(p: &FrontierPoint) -> f64 {
    p.goodput_tokens_per_s.unwrap_or(p.output_tokens_per_s)
}

/// Whether a point may be the best: it meets the SLO (with one; without,
/// it is not judged to miss it), it is steady, and it gave good tokens.
pub fn may_be_best(doc: &FrontierResult, p: &FrontierPoint) -> bool {
    let judged = doc.slo.is_some();
    (if judged { p.meets_slo == Some(true) } else { p.meets_slo != Some(false) })
        && p.steady != Some(false)
        && good_rate(p) > 0.0
}

/// The figure [`best_point`] ranks a point of `c` by: good output tokens
/// per USD where `per_usd`, else good output tokens/s per GPU.
pub fn ranked_value(c: &FrontierConfig, p: &FrontierPoint, per_usd: bool) -> f64 {
    match c.usd_per_hour() {
        Some(u) if per_usd => good_rate(p) * 3600.0 / u,
        _ => good_rate(p) / f64::from(c.gpus.max(1)),
    }
}

pub fn best_point(doc: &FrontierResult) -> Option<BestPoint> {
    let priced = ranks_per_usd(doc);
    let value = |id: PointId, p: &FrontierPoint| ranked_value(&doc.configs[id.config], p, priced);
    let judged = doc.slo.is_some();
    let (id, p) = doc.points().filter(|(_, p)| may_be_best(doc, p)).max_by(|a, b| {
        value(a.0, a.1)
            .total_cmp(&value(b.0, b.1))
            .then(a.1.tokens_per_s_per_user.unwrap_or(0.0).total_cmp(&b.1.tokens_per_s_per_user.unwrap_or(0.0)))
    })?;
    let v = value(id, p);
    let c = &doc.configs[id.config];
    let within = if judged { "among the points that meet the SLO" } else { "(no SLO given: every point counts)" };
    // Without an SLO no token is judged: all output counts, named as such
    // (it had read "good output tokens" beside a goodput of "-").
    let tokens = if judged { "good output tokens" } else { "output tokens" };
    // Three significant digits in a unit of their size: two decimals of
    // millions had read "0.00 M" for a long prompt's few thousand.
    let reason = if priced {
        format!(
            "{} at {}: the most {tokens} per dollar ({}, ${} per million) {within}",
            c.id,
            p.load.label(),
            count(v),
            significant(1e6 / v)
        )
    } else {
        format!(
            "{} at {}: the most {tokens}/s per GPU ({v:.0}) {within} (no price per GPU-hour for every \
             configuration, so not per dollar)",
            c.id,
            p.load.label()
        )
    };
    Some(BestPoint { at: id, good_tokens_per_usd: priced.then_some(v), reason })
}

/// `v` to three significant digits (4370 → `4370`, 12.34 → `12.3`, 0.01234
/// → `0.0123`).
pub fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - v.abs().log10().floor() as i32).clamp(0, 12);
    format!("{v:.*}", digits as usize)
}

/// A count to three significant digits in a unit of its size: `4.37 k`,
/// `594 k`, `1.10 M`, `870`.
pub fn count(v: f64) -> String {
    match v.abs() {
        a if a >= 1e9 => format!("{} G", significant(v / 1e9)),
        a if a >= 1e6 => format!("{} M", significant(v / 1e6)),
        a if a >= 1e3 => format!("{} k", significant(v / 1e3)),
        _ => significant(v),
    }
}

/// For each configuration, why it has no point on `doc.frontier`: it
/// failed, it has no point with a per-user speed, or (the nearest miss) a
/// frontier point of another configuration that dominates its best point,
/// with both points' figures. `None` for one with a frontier point.
pub fn dominance_reasons(doc: &FrontierResult) -> Vec<Option<String>> {
    let on: std::collections::HashSet<usize> = doc.frontier.iter().map(|p| p.config).collect();
    let front: Vec<(PointId, (f64, f64))> =
        doc.frontier.iter().filter_map(|&id| doc.point(id).and_then(plane).map(|xy| (id, xy))).collect();
    doc.configs
        .iter()
        .enumerate()
        .map(|(ci, c)| {
            if c.status == ConfigStatus::Failed {
                return Some(format!("failed: {}", c.error.as_deref().unwrap_or("see its log")));
            }
            if on.contains(&ci) {
                return None;
            }
            let pts: Vec<(usize, (f64, f64))> =
                c.points.iter().enumerate().filter_map(|(i, p)| plane(p).map(|xy| (i, xy))).collect();
            if pts.is_empty() {
                return Some("no point with a per-user speed (no request gave a TPOT)".into());
            }
            // The frontier point that beats this configuration by the
            // least: for each of its points, the dominating frontier point
            // nearest in per-user speed; the pair with the smallest margin.
            let mut miss: Option<(f64, usize, PointId)> = None;
            for &(pi, xy) in &pts {
                for &(fid, f) in &front {
                    if dominates(f, xy) {
                        let margin = (f.1 / xy.1.max(1e-12)).max(f.0 / xy.0.max(1e-12));
                        if miss.is_none_or(|m| margin < m.0) {
                            miss = Some((margin, pi, fid));
                        }
                    }
                }
            }
            let per_usd = per_usd_reason(doc, ci);
            // A point one with a frontier point (within TIE) is drawn once,
            // as the first listed: said so, not as beaten.
            let tie = pts.iter().find_map(|&(pi, xy)| front.iter().find(|f| ties(f.1, xy)).map(|f| (pi, f.0)));
            if let (Some((pi, fid)), None) = (tie, &per_usd) {
                let (p, f) = (&c.points[pi], doc.point(fid).expect("a frontier id names a point"));
                let best = match doc.best.as_ref().filter(|b| b.at.config == ci) {
                    Some(_) => "; it holds the best point",
                    None => "",
                };
                return Some(format!(
                    "its point at {} ({:.0} tok/s/GPU at {:.1} tok/s/user) is one with {} at {} ({:.0} tok/s/GPU at \
                     {:.1} tok/s/user): within {} % on both axes, drawn once, as the first listed{best}",
                    p.load.label(),
                    p.output_tokens_per_s_per_gpu,
                    p.tokens_per_s_per_user.unwrap_or(0.0),
                    doc.configs[fid.config].id,
                    f.load.label(),
                    f.output_tokens_per_s_per_gpu,
                    f.tokens_per_s_per_user.unwrap_or(0.0),
                    TIE * 100.0,
                ));
            }
            let Some((_, pi, fid)) = miss else {
                return Some(per_usd.unwrap_or_else(|| "not on the frontier".into()));
            };
            let (p, f) = (&c.points[pi], doc.point(fid).expect("a frontier id names a point"));
            let other = &doc.configs[fid.config];
            // Cheaper GPUs can lose per GPU and still win per dollar.
            // Unpriced, the best is by good tokens/s per GPU, not per dollar.
            let lead = match doc.best.as_ref().filter(|b| b.at.config == ci) {
                Some(b) if b.good_tokens_per_usd.is_some() => {
                    "off the frontier per GPU, yet the best point per dollar: its nearest point to it"
                }
                Some(_) => {
                    "off the frontier, yet the best point by good tokens/s per GPU (those within the SLO): its \
                     nearest point to it"
                }
                None => "dominated: its nearest point to the frontier",
            };
            let beaten = format!(
                "({}: {:.0} tok/s/GPU at {:.1} tok/s/user) is beaten by {} at {} ({:.0} tok/s/GPU at {:.1} \
                 tok/s/user)",
                p.load.label(),
                p.output_tokens_per_s_per_gpu,
                p.tokens_per_s_per_user.unwrap_or(0.0),
                other.id,
                f.load.label(),
                f.output_tokens_per_s_per_gpu,
                f.tokens_per_s_per_user.unwrap_or(0.0),
            );
            // On the per-dollar frontier it is not plainly dominated: it
            // loses per GPU and wins per token bought.
            if let Some(why) = per_usd {
                let best = match doc.best.as_ref().filter(|b| b.at.config == ci) {
                    Some(_) => "; it holds the best point",
                    None => "",
                };
                return Some(format!("{why}{best}; per GPU its nearest point to the per-GPU frontier {beaten}"));
            }
            Some(format!("{lead} {beaten}"))
        })
        .collect()
}

/// Why a configuration off the per-GPU frontier still counts, when it has
/// a point on the per-dollar one: its speeds there, with the tokens per
/// dollar it gives against the per-GPU frontier's point nearest in speed.
fn per_usd_reason(doc: &FrontierResult, ci: usize) -> Option<String> {
    let own: Vec<PointId> = doc.frontier_per_usd.iter().copied().filter(|id| id.config == ci).collect();
    let first = *own.first()?;
    // Its point of most tokens per dollar, set against the per-GPU
    // frontier's point nearest to it in per-user speed.
    let &at = own.iter().max_by(|a, b| {
        let v = |id: PointId| plane_per_usd(doc, id).map_or(f64::NEG_INFINITY, |xy| xy.1);
        v(**a).total_cmp(&v(**b))
    })?;
    let (x, v) = plane_per_usd(doc, at)?;
    let speeds = match own.len() {
        1 => format!("{x:.1} tok/s/user"),
        _ => {
            let lo = plane_per_usd(doc, first)?.0;
            let hi = plane_per_usd(doc, *own.last()?)?.0;
            format!("{lo:.1} to {hi:.1} tok/s/user")
        }
    };
    let p = doc.point(at)?;
    let mut why = format!(
        "off the per-GPU frontier, on the per-dollar frontier: the most output tokens per dollar at {speeds} ({} at \
         {x:.1} tok/s/user: {} per $, ${} per million)",
        p.load.label(),
        count(v),
        significant(1e6 / v)
    );
    let near = doc
        .frontier
        .iter()
        .filter_map(|&id| Some((id, plane(doc.point(id)?)?.0, plane_per_usd(doc, id)?.1)))
        .min_by(|a, b| (a.1 - x).abs().total_cmp(&(b.1 - x).abs()));
    if let Some((id, fx, fv)) = near.filter(|n| n.2 < v) {
        let _ = std::fmt::Write::write_fmt(
            &mut why,
            format_args!(
                ", {:.0}% more than the per-GPU frontier's {} at {} ({fx:.1} tok/s/user: {} per $)",
                (v / fv - 1.0) * 100.0,
                doc.configs[id.config].id,
                doc.configs[id.config].points[id.point].load.label(),
                count(fv)
            ),
        );
    }
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_frontier_of_small_sets() {
        // (points, frontier indices in rising x)
        type Case<'a> = (&'a [(f64, f64)], &'a [usize]);
        let cases: &[Case] = &[
            (&[], &[]),
            (&[(1.0, 1.0)], &[0]),
            // One dominates the other.
            (&[(1.0, 1.0), (2.0, 2.0)], &[1]),
            // A trade-off: both stay.
            (&[(1.0, 3.0), (3.0, 1.0)], &[0, 1]),
            // Equal points: neither dominates; the first is kept.
            (&[(2.0, 2.0), (2.0, 2.0)], &[0]),
            // Within 0.1 % on both axes: one point, the first listed.
            (&[(166.95, 660.2), (166.9, 660.5)], &[0]),
            (&[(166.9, 660.5), (166.95, 660.2)], &[0]),
            // Apart by more on either axis: both stay.
            (&[(166.9, 661.5), (167.2, 660.2)], &[0, 1]),
            // Same x, lower y is dominated; same y, lower x too.
            (&[(2.0, 1.0), (2.0, 3.0), (1.0, 3.0)], &[1]),
            // A curve and a point under it.
            (&[(10.0, 100.0), (20.0, 80.0), (40.0, 30.0), (15.0, 50.0)], &[0, 1, 2]),
            // Not finite: left out.
            (&[(f64::NAN, 5.0), (1.0, 1.0), (f64::INFINITY, 1.0)], &[1]),
        ];
        for (pts, want) in cases {
            assert_eq!(pareto(pts), want.to_vec(), "{pts:?}");
        }
    }

    fn point(x: f64, y: f64, meets: Option<bool>) -> FrontierPoint {
        FrontierPoint {
            load: Load::Concurrency(1),
            output_tokens_per_s: y,
            output_tokens_per_s_per_gpu: y,
            tokens_per_s_per_user: Some(x),
            ttft_ms: Some(100.0),
            tpot_ms: Some(1000.0 / x),
            goodput_tokens_per_s: meets.map(|m| if m { y } else { 0.0 }),
            meets_slo: meets,
            usd_per_million_output_tokens: None,
            joules_per_output_token: None,
            output_tokens_per_s_per_mw: None,
            completed: 10,
            failed: 0,
            steady: None,
            client_stalled: None,
            spec_decode: None,
            extra: Extra::new(),
        }
    }

    fn config(id: &str, gpus: u32, price: Option<f64>, points: Vec<FrontierPoint>) -> FrontierConfig {
        FrontierConfig {
            id: id.into(),
            params: ParamMap::new(),
            gpu: Some("H100-SXM".into()),
            gpus,
            gpu_hour_usd: price,
            status: ConfigStatus::Ok,
            error: None,
            exit_status: None,
            log_tail: None,
            dominated: None,
            exited_during: None,
            points_of: None,
            serve_command: None,
            points,
            extra: Extra::new(),
        }
    }

    fn doc(slo: bool, configs: Vec<FrontierConfig>) -> FrontierResult {
        FrontierResult {
            model: "m".into(),
            slo: slo.then(|| "tpot<=50ms".into()),
            configs,
            ..FrontierResult::new(
                Tool { name: "goodput".into(), version: "0".into(), commit: None },
                FrontierSource::Predicted,
                0.9,
                50.0,
            )
        }
    }

    #[test]
    fn the_analysis_names_the_frontier_the_best_and_why_the_others_lost() {
        let mut failed = config("broken", 1, Some(2.0), Vec::new());
        failed.status = ConfigStatus::Failed;
        failed.error = Some("out of memory".into());
        let mut d = doc(
            true,
            vec![
                // Fast per user, low throughput; meets the SLO at both loads.
                config("a", 1, Some(2.0), vec![point(60.0, 500.0, Some(true)), point(40.0, 900.0, Some(true))]),
                // Beaten everywhere by a.
                config("b", 1, Some(2.0), vec![point(50.0, 400.0, Some(true)), point(30.0, 800.0, Some(false))]),
                // High throughput, slow per user; misses the SLO.
                config("c", 2, Some(2.0), vec![point(10.0, 2000.0, Some(false))]),
                failed,
            ],
        );
        analyze_frontier(&mut d);
        let ids: Vec<(usize, usize)> = d.frontier.iter().map(|p| (p.config, p.point)).collect();
        assert_eq!(ids, vec![(2, 0), (0, 1), (0, 0)]);
        let best = d.best.as_ref().unwrap();
        // a's second point: 900 tok/s on one GPU at 2 USD/h.
        assert_eq!(best.at, PointId { config: 0, point: 1 });
        assert!((best.good_tokens_per_usd.unwrap() - 900.0 * 3600.0 / 2.0).abs() < 1e-6);
        assert!(best.reason.contains("a at concurrency 1"), "{}", best.reason);
        assert_eq!(d.configs[0].dominated, None);
        assert_eq!(d.configs[2].dominated, None);
        let b = d.configs[1].dominated.as_deref().unwrap();
        assert!(b.starts_with("dominated") && b.contains("beaten by a"), "{b}");
        assert_eq!(d.configs[3].dominated.as_deref(), Some("failed: out of memory"));

        // Without prices, by good tokens/s per GPU: c's 2 GPUs count.
        let mut d = doc(
            false,
            vec![
                config("one", 1, None, vec![point(20.0, 700.0, None)]),
                config("two", 2, None, vec![point(20.0, 1000.0, None)]),
            ],
        );
        d.configs[1].points[0].output_tokens_per_s = 2000.0;
        analyze_frontier(&mut d);
        let best = d.best.unwrap();
        assert_eq!(best.at.config, 1);
        assert_eq!(best.good_tokens_per_usd, None);
        assert!(best.reason.contains("per GPU"), "{}", best.reason);
    }

    /// A configuration whose only point lies within 0.1 % of a frontier
    /// point on both axes is not on it (drawn once, the first listed), and
    /// its line says it is one with that point, not beaten by it (it is
    /// better per GPU).
    #[test]
    fn a_point_one_with_a_frontier_point_is_said_to_be_one_with_it() {
        let mut d = doc(
            true,
            vec![
                config("first", 1, Some(2.0), vec![point(166.95, 660.2, Some(true)), point(100.0, 1000.0, Some(true))]),
                config("second", 1, Some(2.0), vec![point(166.9, 660.5, Some(true))]),
            ],
        );
        analyze_frontier(&mut d);
        let ids: Vec<(usize, usize)> = d.frontier.iter().map(|p| (p.config, p.point)).collect();
        assert_eq!(ids, vec![(0, 1), (0, 0)]);
        let why = d.configs[1].dominated.as_deref().unwrap();
        assert!(
            why.starts_with("its point at concurrency 1 (660 tok/s/GPU at 166.9 tok/s/user) is one with first")
                && why.contains("within 0.1 % on both axes")
                && !why.contains("beaten"),
            "{why}"
        );
    }

    /// The best point off the frontier is said to be best by what it was
    /// chosen by: per dollar with prices, by good tokens/s per GPU without
    /// (it had said "per dollar" with no price given).
    #[test]
    fn a_best_point_off_the_frontier_is_said_to_be_best_by_its_measure() {
        for price in [None, Some(2.0)] {
            let mut d = doc(
                true,
                vec![
                    config("fast", 1, price, vec![point(50.0, 1000.0, Some(false))]),
                    config("slow", 1, price, vec![point(40.0, 800.0, Some(true))]),
                ],
            );
            analyze_frontier(&mut d);
            assert_eq!(d.best.as_ref().unwrap().at.config, 1);
            let why = d.configs[1].dominated.as_deref().unwrap();
            if price.is_some() {
                assert!(why.starts_with("off the frontier per GPU, yet the best point per dollar"), "{why}");
            } else {
                assert!(
                    why.contains("yet the best point by good tokens/s per GPU") && !why.contains("dollar"),
                    "{why}"
                );
            }
        }
    }

    /// Two GPUs, priced: the dearer one beats the cheaper per GPU at each
    /// speed (the same two speeds), and the cheaper gives more tokens per dollar at each. The
    /// cheaper is on the per-dollar frontier and is not called dominated
    /// (it had been, per GPU alone, and an operator sent to the dearer).
    #[test]
    fn a_cheaper_gpu_beaten_per_gpu_is_on_the_per_dollar_frontier() {
        let eight = |x: f64, y: f64| {
            let mut p = point(x, y, Some(true));
            p.output_tokens_per_s = y * 8.0;
            p
        };
        let mut d = doc(
            true,
            vec![
                config("h100 tp8", 8, Some(2.5), vec![eight(52.0, 1200.0), eight(30.0, 2300.0)]),
                config("h200 tp4x2", 8, Some(3.2), vec![eight(52.0, 1300.0), eight(30.0, 2500.0)]),
            ],
        );
        analyze_frontier(&mut d);
        let configs = |f: &[PointId]| f.iter().map(|p| p.config).collect::<Vec<_>>();
        // Per GPU the h200 alone; per dollar the h100 alone.
        assert_eq!(configs(&d.frontier), vec![1, 1]);
        assert_eq!(configs(&d.frontier_per_usd), vec![0, 0]);
        let h100 = &d.configs[0];
        assert!(
            h100.tokens_per_usd(&h100.points[0]).unwrap()
                > 1.15 * d.configs[1].tokens_per_usd(&d.configs[1].points[0]).unwrap()
        );
        let why = d.configs[0].dominated.as_deref().unwrap();
        assert!(why.starts_with("off the per-GPU frontier, on the per-dollar frontier"), "{why}");
        assert!(!why.contains("dominated"), "{why}");
        assert!(why.contains("30.0 to 52.0 tok/s/user") && why.contains("beaten by h200 tp4x2"), "{why}");
        // The h100's tokens per dollar at 30 tok/s/user, against the h200's
        // nearest per-GPU frontier point: 2300 / 2.5 over 2500 / 3.2.
        let more = (2300.0 / 2.5) / (2500.0 / 3.2) * 100.0 - 100.0;
        assert!(why.contains(&format!("{more:.0}% more than the per-GPU frontier's h200 tp4x2")), "{why}");
        // The best is per dollar: the h100's point of most tokens.
        assert_eq!(d.best.as_ref().unwrap().at, PointId { config: 0, point: 1 });

        // One price for both: the per-dollar frontier is the per-GPU one,
        // not given twice.
        d.configs[1].gpu_hour_usd = Some(2.5);
        analyze_frontier(&mut d);
        assert!(d.frontier_per_usd.is_empty());
        // One configuration unpriced: no per-dollar frontier, and the
        // h100 is dominated per GPU as before.
        d.configs[1].gpu_hour_usd = None;
        analyze_frontier(&mut d);
        assert!(d.frontier_per_usd.is_empty());
        assert!(d.configs[0].dominated.as_deref().unwrap().starts_with("dominated"));
        let v = serde_json::to_value(&d).unwrap();
        assert!(v.get("frontier_per_usd").is_none(), "left out when empty");
    }

    /// The best point's tokens per dollar in a unit of their size: a long
    /// prompt's few thousand had read "0.00 M".
    #[test]
    fn the_best_reason_gives_tokens_per_dollar_in_a_unit_of_their_size() {
        assert_eq!(count(4370.4), "4.37 k");
        assert_eq!(count(594_321.0), "594 k");
        assert_eq!(count(1_104_000.0), "1.10 M");
        assert_eq!(count(870.2), "870");
        assert_eq!(significant(228.8), "229");
        assert_eq!(significant(0.01234), "0.0123");
        // 1.214 output tokens/s on one GPU at 1 USD/h: 4370 tokens per $.
        let mut d = doc(true, vec![config("b200", 1, Some(1.0), vec![point(5.0, 1.214, Some(true))])]);
        analyze_frontier(&mut d);
        let why = &d.best.as_ref().unwrap().reason;
        assert!(why.contains("per dollar (4.37 k, $229 per million)"), "{why}");
    }

    #[test]
    fn nothing_meets_the_slo_means_no_best() {
        let mut d = doc(true, vec![config("a", 1, Some(1.0), vec![point(10.0, 10.0, Some(false))])]);
        analyze_frontier(&mut d);
        assert_eq!(d.best, None);
        assert_eq!(d.frontier.len(), 1);
        assert!(no_best_reason(&d).starts_with("no point met the SLO"));
        // Points that completed, met it, and were not steady: told so (it
        // had said "no point completed a request").
        let mut unsteady = point(10.0, 10.0, Some(true));
        unsteady.steady = Some(false);
        let mut d = doc(true, vec![config("a", 1, Some(1.0), vec![unsteady.clone()])]);
        analyze_frontier(&mut d);
        assert_eq!(d.best, None);
        assert!(no_best_reason(&d).contains("were not steady"), "{}", no_best_reason(&d));
        unsteady.meets_slo = None;
        let mut d = doc(false, vec![config("a", 1, Some(1.0), vec![unsteady])]);
        analyze_frontier(&mut d);
        assert!(no_best_reason(&d).starts_with("no point was steady"), "{}", no_best_reason(&d));
    }

    #[test]
    fn a_document_reads_back_as_written() {
        let mut d = doc(true, vec![config("a", 1, Some(2.0), vec![point(60.0, 500.0, Some(true))])]);
        d.configs[0].params.insert("tp".into(), "1".into());
        analyze_frontier(&mut d);
        let text = serde_json::to_string(&d).unwrap();
        let back: FrontierResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["source"], "predicted");
        assert_eq!(v["configs"][0]["status"], "ok");
        assert_eq!(v["frontier"][0], serde_json::json!({"config": 0, "point": 0}));
    }

    proptest! {
        #[test]
        fn the_frontier_is_undominated_and_dominates_the_rest(
            pts in proptest::collection::vec((0u32..20, 0u32..20), 0..40)
        ) {
            // Small integer grids make ties and equal points common.
            let xy: Vec<(f64, f64)> = pts.iter().map(|&(x, y)| (f64::from(x), f64::from(y))).collect();
            let front = pareto(&xy);
            let on: std::collections::HashSet<usize> = front.iter().copied().collect();
            prop_assert_eq!(on.len(), front.len());
            for &f in &front {
                for (j, &q) in xy.iter().enumerate() {
                    prop_assert!(!dominates(q, xy[f]), "frontier point {} dominated by {}", f, j);
                }
            }
            // Off it: dominated, or one with a frontier point (an equal
            // point later in the list).
            for i in (0..xy.len()).filter(|i| !on.contains(i)) {
                prop_assert!(
                    front.iter().any(|&f| dominates(xy[f], xy[i]) || (ties(xy[f], xy[i]) && f < i)),
                    "{} is off the frontier but undominated", i
                );
            }
            for w in front.windows(2) {
                prop_assert!(xy[w[0]].0 <= xy[w[1]].0 && xy[w[0]].1 >= xy[w[1]].1);
            }
        }
    }
}
