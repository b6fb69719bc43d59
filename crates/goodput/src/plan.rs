//! `goodput plan`: which deployment to run. The simulated engine, in
//! virtual time, traces each configuration (GPU type, tensor parallelism,
//! replicas to fill the GPU budget, precision, batch limit, chunked-prefill
//! budget, and with `--pd` prefill/decode disaggregation ratios) at rising
//! load; the points go into one frontier document
//! (goodput-core's `doc::frontier`), whose analysis gives the Pareto
//! frontier of output tokens/s per GPU against tokens/s per user, the point
//! with the most good tokens per dollar within the SLO, and why the other
//! configurations lost.
//!
//! With `--trace`, each configuration is simulated whole (its replicas
//! behind the router, each router of `--router` its own configuration) and
//! its load rises by replaying the trace faster, rather than by closed
//! loops of users on one replica.
//!
//! With `--turns`, each user of a closed loop holds multi-turn sessions, and
//! a configuration of several replicas runs whole behind each router of
//! `--router` (which decides where a later turn's history is cached); users
//! who think between turns climb past the batch limit.
//!
//! Pipeline stages (`--pp`) and expert-parallel sizes (`--ep`, for a
//! mixture of experts) join the search: each TP takes every number of
//! stages that holds the model (more free cache for more users), and each
//! EP size its own group of TP degrees.
//!
//! What cannot win is not simulated: configurations whose weights do not
//! fit, loads past a curve's miss of the SLO (its second in a row, where
//! TTFT alone missed), past where its throughput stopped rising or past a
//! trace point not steady, batch limits that only cut a curve short,
//! and disaggregation ratios far from the workload's prefill:decode
//! balance.
//! Every TP degree and pipeline depth that fits is simulated: one user's
//! speed, or the cache a depth frees, does not tell which wins within the
//! SLO at many users.

use crate::cli::{PlanArgs, WarmupArg, MAX_GPUS};
use crate::virtual_point::{estimate_result, estimate_result_streamed, prompt_kind, spec_decoding, VirtualServer};
use crate::{common, output, setup};
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::analysis::slo::{SloMetric, DEFAULT_ATTAINMENT};
use goodput_core::doc::config::{ep_ranks, pool_gpus, Extra, WorkloadConfig};
use goodput_core::doc::frontier::{
    analyze_frontier, ConfigStatus, FrontierConfig, FrontierPoint, FrontierResult, FrontierSource, ParamMap,
};
use goodput_core::doc::sweep::{meets_slo, Load};
use goodput_core::{AnalysisOptions, Slo};
use goodput_load::trace::TraceEntry;
use goodput_load::{LoadPlan, Workload};
use goodput_sim::engine::{
    kv_capacity, BatchShape, Calibration, Disaggregation, EngineConfig, GpuFamily, GpuSpec, KvCacheDtype, LoadBalance,
    ModelSpec, Mxfp4Activations, Precision, PromptKind, Roofline, RouterPolicy, SchedulerPolicy, SpecDecoding,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The most configurations one search makes of its lists (counted as they
/// are made: their lists' product counts many that no budget holds).
pub const MAX_CONFIGURATIONS: usize = 10_000;

/// A curve whose output throughput rose by less than this share from one
/// load to the next has saturated: more users only wait longer, so the
/// points past it are dominated by it.
const SATURATED: f64 = 0.03;
/// A configuration's field (in its `extra`) that says why its curve ends
/// before it saturated or missed the SLO: a heavier load was refused.
const CUT: &str = "cut";

/// The `cut` of a curve a stop cut short.
const INTERRUPTED_CUT: &str = "its curve is cut where the plan was interrupted; the points before it are kept";
/// A trace point's field (in its `extra`) that says why it is not steady:
/// the stability verdict's reason. Such a point ends its curve.
const UNSTEADY: &str = "unsteady";
/// The fewest requests a point is measured on (beside its warm-up).
const MIN_REQUESTS: u64 = 16;
/// The fewest requests a point sends per user, whatever `-n` says: fewer
/// leave no time with every user in the loop to measure (`-n 1` at 512
/// users had measured one step's burst over less than a step, 20 times
/// the GPU's peak).
const MIN_REQUESTS_PER_USER: u64 = 4;
/// The fewest completions per user a point's steady window must hold for
/// its rate to be one ([`steady_output_rate`]).
const MIN_STEADY_COMPLETIONS_PER_USER: u64 = 2;

/// The GPUs searched whose family no public measurement has calibrated
/// (the engine runs them on another family's constants): a note for each, and the
/// best point's reason says so when it is one of theirs. Their points are
/// drawn beside calibrated GPUs' as if as sure, and a frontier across the
/// two had read as a finding. The document's `uncalibrated_gpus` names
/// them, for the chart's legend, the tables and the CSV. A predicted
/// frontier's (`plan`, and `sweep --serve-grid --estimate`'s); called
/// after the analysis, which chose the best. A calibrated family whose
/// check leaves part out (CDNA3, Blackwell) gets its note, unmarked.
pub(crate) fn mark_uncalibrated(doc: &mut FrontierResult, fitted: &[GpuFamily]) {
    // Each such GPU once, its note, and its configurations. A family the
    // user's --calibration gave constants of its own is not one.
    let mut names: Vec<(GpuSpec, String, usize)> = Vec::new();
    // A calibrated family whose check leaves part out (Blackwell's: its
    // served TTFT at high TP; CDNA3's: offline
    // throughput, not the prefill) is said once, and not marked.
    let mut limits: Vec<String> = Vec::new();
    for c in doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok) {
        let Some(name) = c.gpu.as_deref() else { continue };
        let Ok(spec) = GpuSpec::lookup(name) else { continue };
        if fitted.contains(&spec.family) {
            continue;
        }
        if let Some(note) = goodput_sim::engine::accuracy::family_limit_note(&spec) {
            if !limits.contains(&note) {
                limits.push(note);
            }
            continue;
        }
        match names.iter_mut().find(|(s, ..)| s.name == spec.name) {
            Some((.., count)) => *count += 1,
            None => match goodput_sim::engine::accuracy::uncalibrated_note(&spec) {
                Some(note) => names.push((spec, note, 1)),
                None => continue,
            },
        }
        if !doc.uncalibrated_gpus.iter().any(|u| u == name) {
            doc.uncalibrated_gpus.push(name.to_string());
        }
    }
    let best_gpu = doc.best.as_ref().and_then(|b| doc.configs.get(b.at.config)).and_then(|c| c.gpu.as_deref());
    let best_gpu = best_gpu.and_then(|n| GpuSpec::lookup(n).ok()).map(|s| s.name);
    if let Some((spec, ..)) = names.iter().find(|(s, ..)| Some(&s.name) == best_gpu.as_ref()) {
        // The best a calibrated GPU gives, where one was searched: what to
        // choose if the measurement does not bear the uncalibrated one out.
        let mut calibrated = doc.clone();
        for c in &mut calibrated.configs {
            if c.gpu
                .as_deref()
                .and_then(|n| GpuSpec::lookup(n).ok())
                .is_none_or(|s| names.iter().any(|(u, ..)| u.name == s.name))
            {
                c.points.clear();
            }
        }
        let fallback = goodput_core::doc::frontier::best_point(&calibrated);
        if let Some(b) = doc.best.as_mut() {
            b.reason.push_str(&format!(
                "; on {}, whose family ({}) is uncalibrated: measure it before choosing it (notes)",
                spec.name, spec.family
            ));
            if let Some(f) = fallback {
                b.reason.push_str(&format!("; on a calibrated GPU the best is {}", f.reason));
            }
        }
    }
    let ok = doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok).count();
    let others = ok > names.iter().map(|(.., n)| n).sum::<usize>();
    let notes: Vec<String> = names
        .into_iter()
        .map(|(_, note, count)| {
            let how = if others { ", and how they stand against the other GPUs'," } else { "" };
            format!(
                "{note}. Its {} share that: its points{how} can be far off; measure it (bench or sweep) before choosing \
                 it",
                plural(count, "configuration"),
            )
        })
        .collect();
    doc.notes.extend(notes);
    doc.notes.extend(limits);
}

/// One configuration to simulate, before it runs.
#[derive(Debug, Clone)]
struct Candidate {
    offer: usize,
    gpu: GpuSpec,
    precision: Precision,
    tp: u32,
    dp: u32,
    /// Pipeline stages of a replica (each on `tp` GPUs).
    pp: u32,
    /// Expert-parallel size (1: none): `ep / tp` of the `dp` ranks share
    /// the experts, stepped as one engine.
    ep: u32,
    max_num_seqs: u32,
    max_num_batched_tokens: u32,
    /// Prefill/decode disaggregation: P and D instances a unit, `dp` units,
    /// the prefill instances on `tp` GPUs and the decode ones on the pool's
    /// own TP where it differs.
    pd: Option<Pools>,
    /// The router in front of the replicas (with `--trace`, or SGLang's
    /// polled power_of_two; otherwise a closed loop simulates one replica).
    router: RouterPolicy,
    /// Speculative decoding's draft tokens a step (0: none), at
    /// `--spec-acceptance` and `--spec-draft-cost`.
    spec: u32,
    /// SGLang's `--load-balance-method` for the ranks of its DP attention
    /// (`auto` where the configuration has none, or runs another scheduler).
    balance: LoadBalance,
    /// Under SGLang's scheduler, colocated: a prompt chunk and the running
    /// decodes in one step (`--enable-mixed-chunk`).
    mixed: bool,
    /// What an MXFP4 mixture of experts' experts multiply against, where
    /// `--mxfp4-activations` searches it (`None`: the server's own).
    activations: Option<Mxfp4Activations>,
    /// The KV cache's dtype (`--kv-cache-dtype`, a list to search).
    kv: KvCacheDtype,
}

/// A unit's prefill and decode pools: P and D instances, and a pool's own
/// tensor- and expert-parallel sizes where `--pd` names them
/// (`4xTP1:1xTP4`, `1xEP8:1xEP16`). In a [`Candidate`] the prefill pool's
/// are the candidate's `tp` and `ep`, and the decode pool's are set only
/// where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pools {
    p: u32,
    d: u32,
    prefill_tp: Option<u32>,
    decode_tp: Option<u32>,
    prefill_ep: Option<u32>,
    decode_ep: Option<u32>,
}

impl Pools {
    /// P:D with no sizes of its own.
    fn ratio(p: u32, d: u32) -> Pools {
        Pools { p, d, prefill_tp: None, decode_tp: None, prefill_ep: None, decode_ep: None }
    }

    /// `2:1`, `2:1xTP4`, `1:1xEP16`: as `--pd` takes it.
    fn spec(&self) -> String {
        self.disaggregation().spec()
    }

    /// Whether the ratio names a pool's own TP or EP.
    fn names_sizes(&self) -> bool {
        self.disaggregation().names_sizes()
    }

    /// The engine's pools, on the link's defaults.
    fn disaggregation(&self) -> Disaggregation {
        Disaggregation {
            prefill: self.p,
            decode: self.d,
            prefill_tp: self.prefill_tp,
            decode_tp: self.decode_tp,
            prefill_ep: self.prefill_ep,
            decode_ep: self.decode_ep,
            link_gbps: None,
            link_latency_us: None,
        }
    }

    /// The decode pool's TP and EP where the prefill pool's are `tp` and `ep`.
    fn decode_sizes(&self, tp: u32, ep: u32) -> (u32, u32) {
        (self.decode_tp.unwrap_or(tp), self.decode_ep.unwrap_or(ep))
    }

    /// GPUs of one unit whose prefill instances run on `tp` and `ep`, each
    /// of `pp` stages.
    fn gpus(&self, tp: u32, ep: u32, pp: u32) -> u32 {
        let prefill = (self.p, self.prefill_tp.unwrap_or(tp), self.prefill_ep.unwrap_or(ep));
        let (dt, de) = self.decode_sizes(tp, ep);
        pool_gpus([prefill, (self.d, dt, de)], pp)
    }

    /// The pools a candidate of prefill TP `tp` and EP `ep` runs, or `None`
    /// where the ratio names another prefill size.
    fn at(self, tp: u32, ep: u32) -> Option<Pools> {
        if self.prefill_tp.is_some_and(|t| t != tp) || self.prefill_ep.is_some_and(|e| e != ep) {
            return None;
        }
        Some(Pools {
            prefill_tp: None,
            decode_tp: self.decode_tp.filter(|&d| d != tp),
            prefill_ep: None,
            decode_ep: self.decode_ep.filter(|&d| d != ep),
            ..self
        })
    }
}

/// `--trace`: the trace, placed on the clock at speed 1, the speeds its
/// points replay it at.
struct PlanTrace {
    entries: Vec<TraceEntry>,
    file: String,
    speeds: Vec<f64>,
}

/// Behind power_of_two ([`runs_whole`]) a closed loop runs the whole
/// configuration, but at most this many of its units (replicas or
/// expert-parallel groups), which stand for the rest: each unit run costs
/// its share of the time and memory (32 groups of Qwen3-30B-A3B on 64
/// H100s had taken 112 s and 1 GB where one group takes a few seconds),
/// and past a few replicas polled power-of-two piles its intervals alike:
/// Llama-3.1-8B on 8, 16 and 32 H100 replicas at 17.5 requests/s each
/// (1,024 / 256 tokens, 1 s polls) gave a p99 TTFT of 489, 483 and
/// 558 ms, a mean of 159, 150 and 157 ms (4 replicas: 644 and 182).
const WHOLE_UNITS_MAX: u32 = 8;

/// The router a disaggregated configuration's pools are simulated with
/// for `router`, the one its script starts: prefix-aware (cache_aware)
/// finds no block of one prompt in another where the workload shares no
/// prefix and sends no turns (`sessions`), so every pick is a miss, the
/// least-loaded instance, which least-loaded gives exactly without
/// keeping the record (it had taken a third of the time of the README's
/// MoE plan).
fn simulated_router(router: RouterPolicy, workload: &Workload, sessions: bool) -> RouterPolicy {
    match (router, workload) {
        (RouterPolicy::PrefixAware, Workload::Synthetic { shared_prefix: None, .. }) if !sessions => {
            RouterPolicy::LeastLoaded
        }
        (r, _) => r,
    }
}

/// Whether a closed loop runs a configuration of `units` units and no
/// pools behind `router` (its loads `polled` or live) whole
/// ([`Search::whole`]).
fn runs_whole(router: RouterPolicy, units: u32, polled: bool) -> bool {
    router == RouterPolicy::PowerOfTwo && (units > 2 || (units > 1 && polled))
}

/// Users who think between turns ([`Search::thinks`]) climb past the
/// batch limit to at most this many times it: a user thinking 63 times as
/// long as a turn takes holds a sequence 1/64 of the time.
const THINKING_USERS_MAX: u64 = 64;

/// `--trace-speed`'s default: each point twice as fast as the one before.
const TRACE_SPEEDS: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];
/// Past the default speeds, a curve still within the SLO and still rising
/// goes on doubling up to this speed (the concurrency ladder's bound is the
/// batch limit; a trace's, this): by then its requests come in a burst.
const MAX_TRACE_SPEED: f64 = 4096.0;

impl Candidate {
    /// Data-parallel ranks one engine drives (an expert-parallel group's).
    fn ranks(&self) -> u32 {
        ep_ranks(self.tp, self.ep)
    }

    /// The units the configuration runs (replicas, expert-parallel groups
    /// or disaggregated units): the simulated one stands for each.
    fn engines(&self) -> u32 {
        self.dp / self.ranks()
    }

    /// Every GPU the configuration takes.
    fn gpus(&self) -> u32 {
        match self.pd {
            Some(pd) => self.engines() * pd.gpus(self.tp, self.ep, self.pp),
            None => self.tp * self.pp * self.dp,
        }
    }
}

/// `auto`'s ratios: P + D at most this, in lowest terms.
const PD_AUTO_MAX: u32 = 5;
/// A ratio P:D whose P/D lies more than this factor from the workload's
/// prefill:decode work (see [`pd_balance`]) leaves one pool idle most of
/// the time: per GPU, it cannot beat the ratios nearer the balance.
const PD_BALANCE_BAND: f64 = 3.0;

/// The constants `--calibration` gives each offered GPU's family, and the
/// families it names (constants of their own, from the user's measurements).
fn calibrations(a: &PlanArgs) -> Result<(BTreeMap<GpuFamily, Calibration>, Vec<GpuFamily>)> {
    let Some(path) = &a.calibration else { return Ok((BTreeMap::new(), Vec::new())) };
    let text = goodput_core::util::input::read_text(path, "--calibration", goodput_core::util::input::SETTINGS_CAP)?;
    let mut out = BTreeMap::new();
    for offer in &a.gpu {
        let family = GpuSpec::lookup(&offer.name)?.family;
        let calibration = Calibration::for_family_from_json(family, &text)
            .with_context(|| format!("--calibration {}", path.display()))?;
        out.insert(family, calibration);
    }
    Ok((out, Calibration::named_families(&text)))
}

/// What `--calibration` changed, family by family: the constants that
/// differ from the shipped ones.
fn calibration_note(path: &Path, calibrations: &BTreeMap<GpuFamily, Calibration>) -> String {
    let shipped = |f: GpuFamily| serde_json::to_value(Calibration::for_family(f)).unwrap_or_default();
    let changed: Vec<String> = calibrations
        .iter()
        .filter_map(|(family, c)| {
            let (ours, theirs) = (serde_json::to_value(c).ok()?, shipped(*family));
            let moved: Vec<String> = ours
                .as_object()?
                .iter()
                .filter(|(k, v)| theirs.get(k.as_str()) != Some(v))
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            (!moved.is_empty()).then(|| format!("{family}'s {}", moved.join(", ")))
        })
        .collect();
    if changed.is_empty() {
        format!("calibration: {} changes no constant of the GPUs on offer", path.display())
    } else {
        format!(
            "calibration: {} sets {} (the other constants are the shipped ones)",
            path.display(),
            changed.join("; ")
        )
    }
}

/// The points simulated at once: `--jobs`, or one a CPU.
fn jobs(a: &PlanArgs) -> usize {
    a.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()), |j| j as usize).max(1)
}

/// What the search shares across its threads.
struct Search<'a> {
    args: &'a PlanArgs,
    model: ModelSpec,
    workload: Workload,
    workload_config: WorkloadConfig,
    opts: AnalysisOptions,
    attainment: f64,
    percentile: f64,
    prompts: PromptKind,
    /// The KV-cache dtypes searched (`--kv-cache-dtype`), each once.
    kv_cache_dtypes: Vec<KvCacheDtype>,
    /// Whether several batch limits are searched (each id then names its own).
    several_seqs: bool,
    /// The memory each point's run may hold: a virtual run's, shared by the
    /// runs that go at once (`--jobs`).
    memory_limit: u64,
    trace: Option<PlanTrace>,
    /// `--turns` and `--think-time`: each user holds multi-turn sessions.
    sessions: Option<goodput_load::Sessions>,
    /// `--router`'s, each its own configuration where replicas run
    /// together ([`routers`]).
    routers: Vec<RouterPolicy>,
    /// The step-time constants of each offered GPU's family, where
    /// `--calibration` gives them; the others run on their shipped ones.
    calibrations: BTreeMap<GpuFamily, Calibration>,
    /// The families `--calibration` names, each given constants of its own
    /// (from the user's measurements): not marked uncalibrated.
    named_families: Vec<GpuFamily>,
    /// Set by Ctrl-C or SIGTERM ([`listen_for_stop`]): no configuration or
    /// point is begun after it.
    stop: Arc<AtomicBool>,
    /// Set where the stop left a configuration out or cut a curve: the
    /// search is then unfinished (a stop after its last point is not).
    cut_short: AtomicBool,
}

/// A curve stopped by Ctrl-C or SIGTERM before its end.
#[derive(Debug, thiserror::Error)]
#[error("the plan was interrupted")]
struct Interrupted;

/// A configuration whose KV cache cannot hold the workload's typical
/// request (the one the context check takes: a synthetic workload's
/// median draws, a trace's longest request) whole: each such request is
/// refused (as vLLM will not start with a longest request past its cache),
/// so it is not simulated. It had been, every request failing, and the
/// configuration listed as run, "no point with a per-user speed".
#[derive(Debug, thiserror::Error)]
#[error(
    "{flags}: a request of {prompt} prompt and {output} output tokens needs {need} tokens of KV cache, more than \
     the {holds} {whose} holds, so each such request would fail"
)]
struct RequestPastCache {
    flags: String,
    prompt: u64,
    output: u64,
    need: u64,
    whose: &'static str,
    holds: u64,
}

/// Ctrl-C, SIGTERM or SIGHUP once sets `stop`: the search begins no new
/// point, and the configurations simulated until then are written, marked
/// interrupted (Ctrl-C had killed it and every configuration done was
/// lost). Twice, goodput exits at once, writing nothing. Only on a runtime
/// of worker threads, which listen while the search holds this one: on one
/// thread (`GOODPUT_THREADS=1`) the signals keep their default, ending the
/// process.
fn listen_for_stop(stop: Arc<AtomicBool>) {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if !multi {
        return;
    }
    let mut signals = crate::interrupt::StopSignals::listen();
    tokio::spawn(async move {
        if let Some(name) = signals.next().await {
            goodput_core::tell!(
                "\nstopping the plan ({name}): no new point; the configurations simulated so far are written \
                 (Ctrl-C or SIGTERM again to quit without them)"
            );
            stop.store(true, Ordering::SeqCst);
            if signals.next().await.is_some() {
                std::process::exit(i32::from(output::EXIT_INTERRUPTED));
            }
        }
    });
}

pub fn plan(mut a: PlanArgs) -> Result<ExitCode> {
    let started_unix_s = common::unix_now();
    a.shape.seed = a.shape.seed.fixed_unless_given();
    check_args(&a)?;
    let routers = routers(&a)?;
    let model = crate::virtual_point::model_spec(&a.model)?;
    setup::no_answers(&a.workload, "plan")?;
    setup::no_images(&a.workload, "plan")?;
    crate::pooling::refuse_virtual(a.api, "plan")?;
    let trace = match &a.trace {
        Some(p) => Some(setup::read_trace(p, 1.0, a.trace_format).with_context(|| format!("--trace {}", p.display()))?),
        None => None,
    };
    let plan_trace = match (&trace, &a.trace) {
        (Some(t), Some(p)) => Some(plan_trace(&a, t, p)?),
        _ => None,
    };
    let (workload, _, workload_config) = setup::workload(&a.workload, a.shape.seed.value, trace)?;
    let slo = a.slo.clone().map(|mut s| {
        if let Some(t) = a.attainment {
            s.attainment = Some(t);
        }
        s
    });
    let percentile = slo.as_ref().and_then(slo_percentile).or(a.percentile).unwrap_or(50.0);
    let mut percentiles = vec![50.0, 90.0, 99.0];
    if !percentiles.contains(&percentile) {
        percentiles.push(percentile);
    }
    let attainment = slo.as_ref().map_or(DEFAULT_ATTAINMENT, |s| s.attainment_target());
    // No intervals: a point shows estimates and verdicts alone, and the
    // intervals on every percentile of every point had been a tenth of a
    // plan's time.
    let opts = AnalysisOptions { percentiles, slo, confidence: None, ..AnalysisOptions::default() };
    let mut inputs = a.workload.inputs();
    inputs.extend(output::named_file("--model", &a.model));
    inputs.extend(a.calibration.as_deref().map(|p| ("--calibration", p)));
    let mut outputs = vec![("--output", a.output.as_deref()), ("--grid-out", a.grid_out.as_deref())];
    outputs.extend(a.exports.outputs());
    output::distinct_files(&inputs, &outputs)?;
    if let Some(g) = &a.grid_out {
        if !g.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml")) {
            bail!(
                "--grid-out {}: the grid is TOML, which sweep --serve-grid reads by its .toml name: name it \
                 grid.toml",
                g.display()
            );
        }
        output::check_file(g, "--grid-out")?;
    }
    if let Some(p) = &a.output {
        let writes = output::Writes { command: "plan", document: "the frontier", markdown: false, records: false };
        output::check_document_named(p, &writes)?;
        output::check_file(p, "--output")?;
    }
    output::check_exports(&a.exports)?;
    if a.exports.markdown.is_some() {
        bail!("--markdown: plan writes its frontier to the terminal, -o (JSON), --csv and --html");
    }
    let several_seqs = a.max_num_seqs.as_ref().is_some_and(|m| m.0.len() > 1);
    let (calibrations, named_families) = calibrations(&a)?;
    let search = Search {
        args: &a,
        model,
        workload,
        workload_config,
        opts,
        attainment,
        percentile,
        prompts: prompt_kind(a.api),
        kv_cache_dtypes: kv_cache_dtypes(&a.kv_cache_dtype)?,
        trace: plan_trace,
        sessions: setup::sessions(&a.shape),
        routers,
        several_seqs,
        memory_limit: crate::virtual_point::VIRTUAL_MEMORY_LIMIT / jobs(&a) as u64,
        calibrations,
        named_families,
        stop: Arc::default(),
        cut_short: AtomicBool::new(false),
    };
    // Sessions no workload can ask (a trace's lines, a dataset of lone
    // prompts, `--turns all` of synthetic questions): refused once, before
    // the search, not as every configuration's failure.
    let session_plan = search.sessions.as_ref().map(|_| search.point_plan(1, 1, 0)).transpose()?;
    if let Some(plan) = &session_plan {
        goodput_load::runner::check_sessions(plan, &search.workload)?;
    }
    let wall = Instant::now();
    let (groups, mut notes) = search.groups()?;
    if let Some(path) = &a.calibration {
        notes.push(calibration_note(path, &search.calibrations));
    }
    if groups.is_empty() {
        if notes.is_empty() {
            notes.push(format!(
                "the lists (--gpu, --precision, --tp, --pp, --ep, --pd) make no configuration that fits the budget \
                 of {} GPUs (--gpus): widen them, or raise --gpus",
                a.budget
            ));
        }
        bail!("no configuration is left to simulate:\n  {}", notes.join("\n  "));
    }
    // -n below the floor of requests per user at some load: said once.
    if let (Some(n), None) = (a.shape.requests, &search.trace) {
        let most = groups.iter().flatten().flat_map(|c| search.loads(c)).max().unwrap_or(1);
        let floor = per_user(MIN_REQUESTS_PER_USER, search.turns_per_session());
        if n < most.saturating_mul(floor) {
            let which = match n / floor {
                0 => "every point".to_string(),
                u => format!("points of more than {u} users per replica"),
            };
            let unit = match search.sessions.is_some() {
                true => format!("session(s), {MIN_REQUESTS_PER_USER} requests at a session's mean turns,"),
                false => "requests".to_string(),
            };
            notes.push(format!(
                "-n {n}: a point sends at least {floor} {unit} per user, so {which} sent {floor} per user (up to \
                 {}): fewer leave no steady time to measure",
                most.saturating_mul(floor)
            ));
        }
    }
    // The model's context is every configuration's: its tail said once.
    let tail = groups
        .first()
        .and_then(|g| g.first())
        .and_then(|c| crate::virtual_point::context_tail_warning(&search.engine(c), &search.workload, search.prompts));
    let over = match (groups.first().and_then(|g| g.first()), &a.workload.dataset) {
        (Some(c), Some(file)) => {
            dataset_context(&search.engine(c), &search.workload, search.prompts, &file.display().to_string())?
        }
        _ => None,
    };
    let history = match (groups.first().and_then(|g| g.first()), &session_plan) {
        (Some(c), Some(plan)) => {
            crate::virtual_point::session_context_warning(&search.engine(c), &search.workload, plan)
        }
        _ => None,
    };
    if let Some(s) = &search.sessions {
        notes.push(sessions_note(&search, s));
    }
    for w in crate::virtual_point::clamp_warnings(&search.workload)?.into_iter().chain(tail).chain(over).chain(history)
    {
        goodput_core::tell!("{w}");
        notes.push(w.trim_start_matches("warning: ").to_string());
    }
    let searched: usize = groups.iter().map(Vec::len).sum();
    listen_for_stop(search.stop.clone());
    let configs = search.run(groups);
    let interrupted = search.cut_short.load(Ordering::SeqCst);
    let mut doc = FrontierResult {
        started_unix_s,
        interrupted,
        model: search.model.name.clone(),
        workload: search.workload_config.clone(),
        sessions: setup::sessions_config(&a.shape),
        slo: search.opts.slo.as_ref().map(|s| s.to_string()),
        configs: configs.iter().map(|c| c.0.clone()).collect(),
        notes,
        ..FrontierResult::new(common::tool(), FrontierSource::Predicted, attainment, percentile)
    };
    let ties = tie_equal_curves(&mut doc);
    analyze_frontier(&mut doc);
    for (i, j, why) in ties {
        doc.configs[i].dominated = Some(format!(
            "its points are those of {}, figure for figure at every load: {why} made no difference here (drawn once)",
            doc.configs[j].id
        ));
    }
    // A batch limit that only cuts a curve short has its points in the
    // curve of the widest limit: said so, rather than simulated again.
    for (i, (_, prefix_of)) in configs.iter().enumerate() {
        if let Some(j) = prefix_of {
            doc.configs[i].points_of = Some(doc.configs[*j].id.clone());
            doc.configs[i].dominated = Some(format!(
                "its points are those of {} up to {} users per replica: a closed loop of no more users than the \
                 batch limit never meets it, and past it users only queue (not simulated again)",
                doc.configs[*j].id, doc.configs[i].params["max_num_seqs"]
            ));
        }
    }
    if let Some(w) = unpriced_warning(&doc) {
        goodput_core::tell!("warning: {w}");
        doc.notes.push(w);
    }
    let unsteady = doc.points().filter(|(_, p)| p.steady == Some(false)).count();
    if unsteady > 0 && search.trace.is_some() {
        doc.notes.push(trace_unsteady_note(&doc, unsteady));
    } else if unsteady > 0 {
        doc.notes.push(format!(
            "{unsteady} point(s) not steady: fewer than {MIN_STEADY_COMPLETIONS_PER_USER} requests per user ended \
             while every user was in the loop, so each gives the run's window's rate, marked steady: false (and \
             \"not steady\" on its row), and none is the best: raise --requests-per-user (or -n)"
        ));
    }
    // A curve cut where a heavier load was refused, said with its points.
    let cuts: Vec<String> = doc
        .configs
        .iter()
        .filter_map(|c| c.extra.get(CUT).and_then(|v| v.as_str()).map(|cut| format!("{}: {cut}", c.id)))
        .collect();
    doc.notes.extend(cuts);
    match &search.trace {
        Some(t) => {
            doc.notes.extend(unsaturated_note(&doc, t, a.trace_speed.is_some()));
            if simulated_points(&doc) > 0 {
                doc.notes.push(TRACE_SPANS_NOTE.into());
            }
        }
        // What each figure counts, said where the figures are (it had been
        // in docs/plan.md alone): the same configuration in estimate reads
        // otherwise, and J/token against tokens/s per MW can read as more
        // than the GPUs' TDP.
        None if simulated_points(&doc) > 0 => doc.notes.push(SPANS_NOTE.into()),
        None => {}
    }
    let simulated = simulated_points(&doc);
    // The frontier's TTFT column and a TTFT limit's verdicts are the
    // engine's least certain figures: said beside them.
    if simulated > 0 {
        use goodput_sim::engine::accuracy::{ttft_note, Start};
        doc.notes.push(ttft_note(if search.trace.is_some() { Start::Schedule } else { Start::Apart }));
        // Its J/tok too: the power model's error on a GPU's measured steps.
        // (Or the power model's shares --calibration gave.)
        doc.notes.push(goodput_sim::engine::accuracy::energy_note_on(
            search.calibrations.iter().map(|(family, c)| (*family, c)),
        ));
        // A mixture of experts' throughput, high on the tables held out.
        doc.notes.extend(goodput_sim::engine::accuracy::moe_note(&search.model));
        // And on AMD's GPUs, its decode far faster than measured: once a
        // GPU among the configurations.
        let mut seen: Vec<String> = Vec::new();
        for gpu in doc.configs.iter().filter_map(|c| GpuSpec::lookup(c.gpu.as_deref()?).ok()) {
            if !seen.contains(&gpu.name) {
                seen.push(gpu.name.clone());
                doc.notes.extend(goodput_sim::engine::accuracy::amd_moe_note(&search.model, &gpu));
            }
        }
        // MXFP4 experts on the MI355X, timed W4A8 by the scheduler's
        // default where InferenceMAX's vLLM runs there set 16-bit
        // activations: once a GPU, where a configuration on it is MXFP4
        // and its activations were not searched.
        let mut told: Vec<String> = Vec::new();
        for c in &doc.configs {
            let mxfp4 =
                c.params.get("precision").is_some_and(|p| p == "mxfp4") && !c.params.contains_key("mxfp4_activations");
            let Some(gpu) = c.gpu.as_deref().and_then(|g| GpuSpec::lookup(g).ok()).filter(|_| mxfp4) else {
                continue;
            };
            if !told.contains(&gpu.name) {
                told.push(gpu.name.clone());
                let mut cfg = goodput_sim::engine::EngineConfig::new(
                    search.model.clone(),
                    gpu,
                    goodput_sim::engine::Precision::Mxfp4,
                );
                cfg.scheduler = c.params.get("scheduler").and_then(|s| s.parse().ok()).unwrap_or_default();
                doc.notes.extend(goodput_sim::engine::accuracy::mxfp4_kernels_note(&cfg).map(|n| {
                    format!(
                        "{n}; plan times every such configuration so (--mxfp4-activations fp8,bf16 plans both \
                         kinds)"
                    )
                }));
            }
        }
        // vLLM's and SGLang's servers at load, faster in the engine than
        // measured: once, where a configuration on a Hopper GPU ran either's
        // scheduler (its params name the scheduler where it is not vLLM's).
        let note = doc.configs.iter().find_map(|c| {
            let gpu = GpuSpec::lookup(c.gpu.as_deref()?).ok()?;
            let scheduler = match c.params.get("scheduler") {
                Some(s) => s.parse().ok()?,
                None => SchedulerPolicy::Vllm,
            };
            goodput_sim::engine::accuracy::served_load_note(scheduler, &gpu)
        });
        doc.notes.extend(note);
    }
    mark_uncalibrated(&mut doc, &search.named_families);
    let weights = crate::launch::Weights {
        served: crate::launch::served_model(&a.model, a.serve_model.as_deref()),
        width: search.model.checkpoint_precision,
        checkpoints: crate::launch::parse_checkpoints(&a.serve_checkpoint)?,
        drafter: a.serve_drafter.clone(),
    };
    crate::launch::set_commands(&mut doc, a.serve_engine, &weights, &a.model, a.gpu_memory_utilization);
    // Power-of-two parts the replicas' loads (SGLang's between its polls,
    // vLLM router's by its draws); without a trace those configurations ran
    // whole, the others one replica a unit: said where such a configuration
    // is in the document.
    let ran_whole = |params: &ParamMap| {
        let (tp, ep, _, dp) = crate::launch::sizes(params);
        let polled = crate::launch::params_router_poll_s(a.serve_engine, params).is_some();
        let router = params.get("router").and_then(|r| r.parse().ok());
        !params.contains_key("pd") && router.is_some_and(|r| runs_whole(r, dp / ep_ranks(tp, ep), polled))
    };
    if search.trace.is_none() && doc.configs.iter().any(|c| ran_whole(&c.params)) {
        let (how, polls) = match a.serve_engine {
            crate::launch::Server::Sglang => (
                format!(
                    "SGLang's router runs power-of-two on loads it polls (its scripts here: every {} s, \
                     --worker-load-check-interval): between polls every request of a pair goes to the replica \
                     that was lighter at the last poll",
                    crate::launch::SGLANG_LOAD_POLL_S
                ),
                ", polls included",
            ),
            server => (
                format!(
                    "{}'s router runs power-of-two on the requests in flight it counts: each request goes to the \
                     lighter of two replicas drawn at random, and among three or more their loads part where an even \
                     split keeps them equal",
                    // TensorRT-LLM's replicas are behind SMG, which polls no
                    // load from trtllm-serve and counts its own.
                    if server == crate::launch::Server::Trtllm { "SMG" } else { "vLLM" }
                ),
                "",
            ),
        };
        let others = match search.sessions {
            Some(_) => "as every configuration of several replicas did with --turns (the sessions note)",
            None => "the others' users were split evenly over their replicas",
        };
        doc.notes.push(format!(
            "{how}. The configurations behind it ran whole (up to {WHOLE_UNITS_MAX} replicas or groups, standing \
             for the rest), their users sent through the router{polls}; {others}"
        ));
    }
    // vLLM's front ends balance a dense model's replicas behind
    // least-loaded, as their one server does: a trace runs them so, closed
    // loops split their users evenly.
    if doc.configs.iter().any(|c| c.params.get("internal_lb").is_some_and(|v| v == "true")) {
        doc.notes.push(format!(
            "Replicas without ranks of attention data-parallel (a dense model's, or a mixture of experts' each on \
             its own GPUs){} are one vLLM server of --data-parallel-size (internal_lb = \"true\" in \
             their parameters), whose front ends balance them themselves (one API server a replica, vLLM's \
             default): each request to the replica of least 4 × waiting + running requests, on the counts its \
             coordinator publishes every 100 ms, each front end counting what it sent since as waiting; {}",
            if search.trace.is_some() || search.sessions.is_some() { " behind least-loaded" } else { "" },
            if search.trace.is_some() || search.sessions.is_some() {
                "they were predicted so"
            } else {
                "the closed loops split the users evenly over them, as that rule keeps alike users, and a grid's \
                 own --estimate runs the rule"
            }
        ));
    }
    // Whether the schedulers were predicted a step ahead, as the servers
    // may run them.
    if !doc.configs.is_empty() {
        doc.notes.push(match (a.async_scheduling, a.no_async_scheduling) {
            (_, true) => "Every configuration was predicted with each step chosen after the one before ends \
                          (async_scheduling = \"false\" in their parameters), and their commands start the servers \
                          so (vLLM's --no-async-scheduling, SGLang's --disable-overlap-schedule, TensorRT-LLM's \
                          disable_overlap_scheduler), where by default each would choose a step while the one \
                          before runs"
                .to_string(),
            (ahead, false) => format!(
                "Every configuration was predicted with its scheduler a step ahead, as the servers run by default \
                 (vLLM's async scheduling since 0.14, SGLang's overlap schedule since 0.4, TensorRT-LLM's overlap \
                 scheduler in its PyTorch backend since May 2025; not on TensorRT-LLM's prefill instances, which its \
                 commands start without){}: step N+1 chosen while step N runs, so a request that reaches a busy \
                 engine joins the step after next, about a step more TTFT under load. For servers started \
                 without (vLLM before 0.14), plan with --no-async-scheduling",
                match ahead {
                    true =>
                        ", vLLM's with pipeline parallelism too (async_scheduling = \"true\" in their \
                             parameters, --async-scheduling in their commands)",
                    false => "; vLLM's with pipeline parallelism without, as 0.14 left it",
                }
            ),
        });
    }
    // Which scheduler TensorRT-LLM's configurations were predicted with,
    // and what its commands start.
    if a.serve_engine == crate::launch::Server::Trtllm && !doc.configs.is_empty() {
        doc.notes.push(
            "TensorRT-LLM's configurations ran TensorRT-LLM's scheduler (scheduler = \"trtllm\" in their \
             parameters): a request is admitted only when the KV cache holds its prompt and whole answer beside what \
             the running requests will still take, and none is evicted; each step's decodes come first, then prompt \
             chunks, within each rank's --max_batch_size and --max_num_tokens; chunked prefill is on, as their \
             commands turn it on (trtllm-serve's default is off), and the KV cache takes the plan's \
             --gpu-memory-utilization of the memory the weights leave free (its free_gpu_memory_fraction). Their \
             commands are scripts that write trtllm-serve's options file (--config) first; prefill apart from \
             decode is context and generation servers behind trtllm-serve disaggregated, whose load_balancing \
             router the plan predicted as least-loaded; replicas (a whole model's, or expert-parallel groups) are \
             servers of their own behind SMG (smg launch), whose power_of_two compares the requests it has in flight \
             to each (trtllm-serve reports no load for it to poll) and stands for least-loaded, as the plan \
             predicted it. A sweep reads their Prometheus text at /prometheus/metrics \
             (return_perf_metrics and enable_iter_perf_stats on) as its server signals: queue, KV cache, tokens, \
             drafts and per-request latencies"
                .into(),
        );
    }
    // Which scheduler SGLang's configurations were predicted with.
    if a.serve_engine == crate::launch::Server::Sglang && !doc.configs.is_empty() {
        let apart = doc.configs.iter().any(|c| c.params.contains_key("pd"));
        // DP attention: more expert-parallel GPUs than a rank's TP.
        let size = |c: &goodput_core::doc::frontier::FrontierConfig, k: &str| {
            c.params.get(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(1)
        };
        let dp_attention = doc.configs.iter().any(|c| size(c, "ep") > size(c, "tp"));
        doc.notes.push(format!(
            "SGLang's configurations ran SGLang's scheduler (scheduler = \"sglang\" in their parameters): a newcomer \
             is admitted while its prompt and whole answer fit beside an estimated share of the running requests' \
             remaining answers, the least advanced are retracted when that share proves short, only prompt chunks \
             are held to --chunked-prefill-size, and prompts and decodes run in separate steps (SGLang's default \
             without --enable-mixed-chunk){}{}{}{}{}{}",
            // A trace runs the replicas whole: SGLang's controller routes
            // a dense model's, as their one server of --dp-size does;
            // closed loops split their users evenly.
            match (search.trace.is_some(), doc.configs.iter().any(|c| dense_replicas(&c.params))) {
                (true, true) => {
                    "; with --trace, a dense model's replicas behind round-robin or least-loaded are one SGLang \
                     server of --dp-size, whose data-parallel controller routes them (its --load-balance-method \
                     round_robin, or total_requests on the loads the replicas publish, read at most every 20 ms), \
                     and were predicted so"
                }
                (false, true) => {
                    "; a dense model's replicas are one SGLang server of --dp-size, whose data-parallel controller \
                     deals them the requests in turn (--load-balance-method round_robin, its default there): the \
                     closed loops split the users evenly over them, and a grid's own --estimate runs the controller"
                }
                _ => "",
            },
            if a.mixed_chunk.contains(&true) {
                "; with --mixed-chunk on (mixed_batches = \"true\", ids ending in mixed, commands with \
                 --enable-mixed-chunk) a prompt chunk runs in one step with the running decodes, which then wait for \
                 no prompt but each take a token of the chunk's budget"
            } else {
                ""
            },
            if dp_attention {
                format!(
                    "; under DP attention each rank runs its own scheduler, with --chunked-prefill-size and \
                     --max-running-requests split over the ranks and --schedule-conservativeness taken times 0.3, as \
                     SGLang sets them, and its data-parallel controller picks each request's rank by {}",
                    balances_said(&a.load_balance_method)
                )
            } else {
                String::new()
            },
            if apart {
                "; in its disaggregated configurations the decode instance reserves a request's prompt and 512 \
                 decoding tokens before its prefill starts, sends the prefill's token once the KV has landed, and \
                 retracts to host memory"
            } else {
                ""
            },
            if a.gpu_memory_utilization.is_none() {
                "; with no --gpu-memory-utilization given, each configuration's KV cache is what SGLang's own \
                 --mem-fraction-static default for it leaves (set from the GPU's memory, the chunk, its CUDA graphs \
                 and TP, its activations outside the share), and its commands leave the flag out so that SGLang sets \
                 the same"
            } else {
                ""
            },
            if a.max_num_seqs.is_none() {
                ". With no --max-num-seqs given, each configuration's cap is SGLang's own default for its KV cache \
                 (half its tokens, at most 2,048 to 4,096 as the cache holds more of the model's context; a \
                 disaggregated configuration's, its decode instances'), and its commands name it \
                 (--max-running-requests; under DP attention the group's, a rank's default times its ranks, as \
                 SGLang gives each rank its share of the flag)"
            } else {
                ""
            }
        ));
    }
    if interrupted {
        doc.notes.push(format!(
            "the plan was interrupted: {} of the {searched} configurations searched {} in the document (those whose \
             curve the stop cut say so), so the frontier and the best point are of those alone",
            doc.configs.len(),
            if doc.configs.len() == 1 { "is" } else { "are" }
        ));
    }
    doc.notes.push(format!(
        "{}, {} simulated in {} s of wall time",
        plural(doc.configs.len(), "configuration"),
        plural(simulated, "point"),
        seconds(wall.elapsed().as_secs_f64())
    ));
    crate::output::say(&goodput_report::frontier::terminal(&doc));
    if let Some(p) = &a.output {
        output::write_document(p, &doc, "frontier")?;
        if !a.quiet {
            goodput_core::tell!("frontier written to {}", p.display());
        }
    }
    for (format, dest) in a.exports.targets() {
        for f in goodput_report::frontier::export(format, &doc, &dest)? {
            if !a.quiet {
                goodput_core::tell!("{} written to {}", format.exporter().name(), f.display());
            }
        }
    }
    if let Some(out) = a.grid_out.as_deref().filter(|_| doc.points().any(|(_, p)| p.completed > 0)) {
        // The sweep's --estimate predicts on the plan's constants.
        let mut workload = crate::launch::workload_flags(&a.workload);
        // Measured as planned: the same sessions.
        if let Some(s) = setup::sessions_config(&a.shape) {
            workload.extend(["--turns".into(), s.turns, "--think-time".into(), s.think_time]);
        }
        if let Some(p) = &a.calibration {
            workload.extend(["--calibration".to_string(), p.display().to_string()]);
        }
        let cx = crate::launch::SweepContext {
            named: &a.model,
            workload,
            trace: search.trace.as_ref().zip(a.trace.as_deref()).map(|(t, path)| crate::launch::TraceContext {
                path,
                format: clap::ValueEnum::to_possible_value(&a.trace_format)
                    .filter(|_| a.trace_format != goodput_load::trace::TraceFormat::Auto)
                    .map(|v| v.get_name().to_string()),
                rate: setup::trace_rate(&t.entries, a.shape.requests, setup::warmup_requests(&a.shape)),
                requests: a.shape.requests,
                warmup: setup::warmup_requests(&a.shape),
            }),
            plan_output: a.output.as_deref(),
        };
        for g in crate::launch::write_grids(&doc, out, &cx)? {
            let left = match g.left_out.len() {
                0 => String::new(),
                n => format!(
                    " ({} of the frontier left out, with no one command: the file says why)",
                    plural(n, "configuration")
                ),
            };
            match &g.sweep {
                Some(sweep) => goodput_core::tell!(
                    "grid of {} on {} written to {}{left}; measure it with:\n  {sweep}",
                    plural(g.configs, "configuration"),
                    g.gpu,
                    g.path.display(),
                ),
                None => goodput_core::tell!(
                    "warning: no configuration on {} has one command to start it, so the grid written to {} holds \
                     none to measure{left}",
                    g.gpu,
                    g.path.display()
                ),
            }
        }
    }
    if interrupted {
        goodput_core::tell!(
            "error: the plan was interrupted; its document holds the configurations simulated until then"
        );
        return Ok(ExitCode::from(output::EXIT_INTERRUPTED));
    }
    // A search whose every configuration failed, or completed nothing, has
    // no frontier: an error, as a sweep whose every point failed is.
    if doc.points().all(|(_, p)| p.completed == 0) {
        let why = doc.configs.iter().find_map(|c| c.error.as_deref().map(|e| format!(" ({}: {e})", c.id)));
        goodput_core::tell!(
            "error: no configuration completed a request{}: see the notes above, and give a load the \
             configurations can serve",
            why.unwrap_or_default()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What `--turns` made of the plan's loads, said once in its notes.
fn sessions_note(search: &Search, s: &goodput_load::Sessions) -> String {
    let think = match s.think.mean().is_zero() {
        true => "with no pause between an answer and the next question".to_string(),
        false => format!(
            "thinking {} between an answer and the next question, so a user holds no sequence part of the time and \
             a curve climbs past the batch limit (up to {THINKING_USERS_MAX} times it) until its throughput stops \
             rising",
            s.think
        ),
    };
    let pools = if search.args.pd.is_some() {
        "; disaggregated units ran as one prefill pool and one decode pool (up to the same count of units), their \
         router sending each turn to a prefill instance by the prompts it has seen"
    } else {
        ""
    };
    format!(
        "sessions: each user holds one conversation of --turns {} at a time, {think}; each turn sends the \
         conversation so far, which a prefix cache serves where it still holds it. -n counts sessions, and \
         --requests-per-user requests, sent in as many whole sessions as hold them at the mean turns. A \
         configuration of two or more replicas (or expert-parallel groups) ran whole (up to {WHOLE_UNITS_MAX} of \
         them, standing for the rest), every turn sent through its router, which may send a later turn away from \
         the replica that holds its history{pools}",
        s.turns
    )
}

/// Where some configurations that ran have a price per GPU-hour and some
/// not: which GPUs have none, and what that does to the ranking (it had
/// been said only in the best point's reason). Judged on the
/// configurations simulated, not the flags: a GPU without a price none of
/// whose configurations fit changes nothing.
fn unpriced_warning(doc: &FrontierResult) -> Option<String> {
    let ran: Vec<&FrontierConfig> = doc.configs.iter().filter(|c| !c.points.is_empty()).collect();
    if !ran.iter().any(|c| c.gpu_hour_usd.is_some()) {
        return None;
    }
    let mut unpriced: Vec<&str> = ran
        .iter()
        .filter(|c| c.gpu_hour_usd.is_none())
        .filter_map(|c| c.params.get("gpu").map(String::as_str))
        .collect();
    unpriced.sort_unstable();
    unpriced.dedup();
    let first = unpriced.first()?;
    Some(format!(
        "--gpu {} has no price per GPU-hour where the others have one, so the best point is chosen by tokens/s per \
         GPU, not per dollar, and there is no frontier per dollar: give each a price (--gpu {first}=PRICE)",
        unpriced.join(", --gpu ")
    ))
}

/// `n` and `what`, plural unless one.
fn plural(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// Seconds of wall time: to a tenth, or two figures below one.
fn seconds(s: f64) -> String {
    if s >= 1.0 {
        format!("{s:.1}")
    } else {
        format!("{s:.2}")
    }
}

/// What a closed-loop point's figures count, in the notes of every plan
/// that has points.
const SPANS_NOTE: &str = "spans: each point's tok/s, tok/s/GPU, goodput and tok/s/MW are counted while all its users \
     are in the loop (they join apart over one request's time; with --turns, over a session's turns and think \
     times, and a session's window ends as the last session starts), its J/tok over its run's whole window (ramp \
     and drain too), so J/tok × tok/s/MW / 1e6 can pass 1, as if above the GPUs' TDP: the two are of different spans; \
     `estimate` and `sweep --estimate` of the same configuration start users together and count the whole window, \
     so they read lower tok/s and higher TTFT (`estimate --ramp-up` with this point's join time comes near its \
     latencies; docs/plan.md)";

/// What a trace point's figures count, in the notes of every trace plan
/// that has points.
const TRACE_SPANS_NOTE: &str = "spans: each steady point's tok/s, tok/s/GPU, goodput and tok/s/MW are the answers \
     it served over the span the trace offered their requests in (its load's span: a point that keeps up serves \
     what comes), its J/tok over its run's whole window (the drain after the last arrival too), so J/tok × \
     tok/s/MW / 1e6 can pass 1, as if above the GPUs' TDP: the two are of different spans; a point not steady \
     gives its window's rate; `estimate --trace` of the same configuration counts the whole window, so it reads \
     lower tok/s, the more so the faster the replay (docs/plan.md)";

/// With `--trace`: a note on the points not steady, each the end of its
/// curve, with the first one's reason.
fn trace_unsteady_note(doc: &FrontierResult, unsteady: usize) -> String {
    let first = doc.points().find_map(|(c, p)| {
        let why = p.extra.get(UNSTEADY)?.as_str()?;
        let Load::Rate(rate) = p.load else { return None };
        Some(format!("{} at {rate:.1} req/s: {why}", doc.configs[c.config].id))
    });
    format!(
        "{unsteady} point(s) not steady: the trace came faster than the configuration served it, or in a burst too \
         short to measure, so the point's figures are a burst's, not a rate the configuration holds; each is marked \
         steady: false (and \"not steady\" on its row), ends its curve, and is never the best (its reason is its \
         `unsteady` field{}); where the window was mostly ramp-up and drain, a larger -n or a longer trace measures \
         faster speeds",
        first.map(|f| format!("; {f}")).unwrap_or_default()
    )
}

/// The points the configurations hold (their own, not those shared with
/// a wider batch limit's).
fn simulated_points(doc: &FrontierResult) -> usize {
    doc.configs.iter().map(|c| c.points.len()).sum()
}

/// With `--trace`: a note naming the configurations whose curves end still
/// within the SLO and still rising, at the fastest speed tried (the best
/// is then a lower bound, and which configuration it is may change at
/// faster speeds), and the flag that goes further.
fn unsaturated_note(doc: &FrontierResult, t: &PlanTrace, given: bool) -> Option<String> {
    let rising: Vec<&FrontierConfig> = doc
        .configs
        .iter()
        .filter(|c| c.status == ConfigStatus::Ok && !c.points.is_empty() && !c.extra.contains_key(CUT))
        .filter(|c| c.points.last().is_some_and(|p| p.meets_slo != Some(false)) && !at_the_end(&c.points, false))
        .collect();
    if rising.is_empty() {
        return None;
    }
    let top = rising
        .iter()
        .filter_map(|c| match c.points.last().map(|p| p.load) {
            Some(Load::Rate(r)) => Some(r),
            _ => None,
        })
        .fold(0.0, f64::max);
    let fastest = if given { t.speeds.last().copied().unwrap_or(1.0) } else { MAX_TRACE_SPEED };
    let named: Vec<&str> = rising.iter().take(5).map(|c| c.id.as_str()).collect();
    let more =
        if rising.len() > named.len() { format!(" and {} more", rising.len() - named.len()) } else { String::new() };
    let fix = if given {
        format!("add faster speeds to --trace-speed (e.g. {},{})", fastest * 2.0, fastest * 4.0)
    } else {
        "give faster --trace-speed values, or a trace of more requests".to_string()
    };
    Some(format!(
        "{} of {} configurations still met the SLO with throughput still rising at the fastest speed tried \
         ({}×, {top:.1} req/s): {}{more}; their curves are not saturated, so the best point is a lower bound \
         and may change: {fix}",
        rising.len(),
        doc.configs.len(),
        goodput_core::util::number_text(fastest),
        named.join(", ")
    ))
}

/// A `--dataset` whose entries' prompts (with what the chat template adds)
/// and answers pass the model's context: every request that draws one
/// fails (HTTP 400) and counts against the SLO, as in estimate. Refused,
/// before the search, only where every entry passes it (each curve would
/// stop at its first point as if the SLO were to blame); where some do, a
/// warning naming how many and the first few (1-based, in the file's
/// order), and the search goes on. An answer is the entry's `max_tokens`,
/// or `--output-tokens`' mean. A synthetic workload's lengths are refused
/// alike ([`crate::virtual_point::check_context_of`]).
fn dataset_context(cfg: &EngineConfig, w: &Workload, prompts: PromptKind, file: &str) -> Result<Option<String>> {
    let Workload::Dataset { entries, output, .. } = w else { return Ok(None) };
    let extra = u64::from(prompts.first_turn_extra(cfg.chat_template));
    let context = u64::from(cfg.model.max_context);
    let answer = |e: &goodput_load::workload::DatasetEntry| match output {
        Some(d) => d.mean().round().max(1.0) as u64,
        None => u64::from(e.max_tokens.unwrap_or(1)),
    };
    let over: Vec<(usize, u64, u64)> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (i + 1, u64::from(e.prompt_tokens) + extra, answer(e)))
        .filter(|&(_, p, o)| p.saturating_add(o) > context)
        .collect();
    let Some(&(first, prompt, out)) = over.first() else { return Ok(None) };
    let named = |n: usize| {
        over.iter().take(n).map(|o| o.0.to_string()).collect::<Vec<_>>().join(", ")
            + if over.len() > n { ", …" } else { "" }
    };
    let template = if extra > 0 { format!(", with the {extra} the chat template adds,") } else { String::new() };
    let model = &cfg.model.name;
    if over.len() == entries.len() {
        let more = if over.len() == 1 { String::new() } else { " (and so does every other entry)".to_string() };
        bail!(
            "--dataset {file}: entry {first}'s prompt{template} is {prompt} tokens, and with {out} output tokens \
             passes {model}'s context of {context} tokens{more}: the engine would refuse every request (HTTP 400), \
             and the curves would stop at their first point; give entries within the context, or choose a model \
             with a longer one"
        );
    }
    Ok(Some(format!(
        "warning: --dataset {file}: {} of its {} entries ({}) pass {model}'s context of {context} tokens with their \
         answers (entry {first}'s prompt{template} is {prompt} tokens, with {out} output tokens): the engine answers \
         each request that draws one with HTTP 400, as a server does, and it counts failed against the SLO; drop \
         them to plan for the others alone",
        over.len(),
        entries.len(),
        named(8)
    )))
}

/// `--trace`'s speeds (rising) and routers, checked.
fn plan_trace(a: &PlanArgs, t: &setup::LoadedTrace, path: &Path) -> Result<PlanTrace> {
    let mut speeds = a.trace_speed.clone().unwrap_or_else(|| TRACE_SPEEDS.to_vec());
    if let Some(bad) = speeds.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
        bail!("--trace-speed {bad}: each speed must be a positive number (2 replays the trace twice as fast)");
    }
    speeds.sort_by(f64::total_cmp);
    // Named twice: refused, as --tp 1,1 is (a list is each value once).
    if let Some(w) = speeds.windows(2).find(|w| w[0] == w[1]) {
        bail!("--trace-speed names {} twice: give each speed once", w[0]);
    }
    if t.entries.is_empty() {
        bail!("--trace {} holds no request: give a trace with at least one line", path.display());
    }
    // Its span at each speed: a trace whose requests all come at one instant
    // replays the same at every speed (its offered rate has no value), and
    // one slowed past the clock's horizon cannot be run.
    let span = t.entries.iter().map(|e| e.at).max().unwrap_or_default();
    if span.is_zero() {
        bail!(
            "--trace {}: its {} request(s) all come at the same instant, so replaying it faster or slower changes \
             nothing: give a trace whose requests are spread in time, or plan closed loops of users (--concurrency)",
            path.display(),
            t.entries.len()
        );
    }
    if let Some(slow) = speeds.first().filter(|&&s| span.as_secs_f64() / s > goodput_core::HORIZON.as_secs_f64()) {
        bail!(
            "--trace-speed {}: the trace's last request would come {} s after its first, more than 100 years, \
             longer than any run: give a higher --trace-speed",
            goodput_core::util::number_text(*slow),
            goodput_core::util::number_text(span.as_secs_f64() / slow)
        );
    }
    Ok(PlanTrace { entries: t.entries.to_vec(), file: path.display().to_string(), speeds })
}

/// `--router`'s routers, each once (least-loaded where none is given).
/// They choose among replicas that run together: a trace's, or sessions'
/// ([`Search::whole`]); closed loops of single requests split their users
/// evenly, and take none.
fn routers(a: &PlanArgs) -> Result<Vec<RouterPolicy>> {
    if a.router.is_some() && a.trace.is_none() && a.shape.turns.is_none() {
        bail!(
            "--router chooses among replicas that run together, as a --trace's requests or --turns' sessions do: \
             closed loops of single requests split their users evenly over the replicas; add --trace or --turns, \
             or drop --router"
        );
    }
    let mut routers = Vec::new();
    for r in a.router.as_deref().unwrap_or(&[]) {
        let r: RouterPolicy = r.parse().map_err(|e| anyhow!("--router: {e}"))?;
        // Named twice: refused, as --tp 1,1 is (it had been dropped without a word).
        if routers.contains(&r) {
            bail!("--router names {r} twice: give each router once");
        }
        routers.push(r);
    }
    if routers.is_empty() {
        routers.push(RouterPolicy::LeastLoaded);
    }
    Ok(routers)
}

fn check_args(a: &PlanArgs) -> Result<()> {
    if a.trace.is_some() && a.concurrency.is_some() {
        bail!("--concurrency sets closed loops of users; with --trace the load is the trace replayed at --trace-speed");
    }
    if a.shape.duration.is_some() {
        bail!("--duration: plan measures each point on a count of requests (--requests-per-user, or -n N per point)");
    }
    if a.shape.cancel_rate.is_some() {
        bail!("--cancel-rate belongs to bench, estimate and sweep: plan sends each request to its end");
    }
    // Said from the flags, before the trace is read (the workload's own
    // check, below, would come after the trace's).
    if a.shape.turns.is_some() && a.trace.is_some() {
        bail!("--trace replays single requests at their own times: drop --turns (or --trace, to plan for sessions)");
    }
    if a.spec_tokens.0.iter().all(|&k| k == 0) && (a.spec_acceptance.is_some() || a.spec_draft_cost.is_some()) {
        bail!(
            "--spec-acceptance and --spec-draft-cost describe speculative decoding, which --spec-tokens turns on: \
             add --spec-tokens (0,3 plans without and with three draft tokens a step), or drop them"
        );
    }
    check_balances(a)?;
    check_mixed_chunk(a)?;
    if crate::cli::first_repeat(&a.mxfp4_activations).is_some() {
        bail!("--mxfp4-activations names a kind twice: give fp8, bf16, or fp8,bf16");
    }
    // Refused here, before any configuration runs, not as each one's failure.
    if let Some(&tokens) = a.spec_tokens.0.iter().find(|&&k| k > 0) {
        spec_decoding(tokens, a.spec_acceptance, a.spec_draft_cost).check().map_err(|e| anyhow!(e))?;
    }
    if a.serve_drafter.is_some() && a.spec_tokens.0.iter().all(|&k| k == 0) {
        bail!(
            "--serve-drafter names the drafter of speculative decoding, which --spec-tokens turns on: add \
             --spec-tokens (0,3 plans without and with three draft tokens a step), or drop it"
        );
    }
    // Refused before the search, not after it.
    crate::launch::parse_checkpoints(&a.serve_checkpoint)?;
    if a.attainment.is_some() && a.slo.is_none() {
        bail!("--attainment is the share of requests that must meet the SLO: give the SLO too (--slo 'tpot<=50ms')");
    }
    crate::setup::refuse_quality_terms(a.slo.as_ref(), "plan")?;
    if let Some(share) = a.gpu_memory_utilization.filter(|s| !(*s > 0.0 && *s <= 1.0)) {
        bail!("--gpu-memory-utilization {share} must lie in (0, 1]");
    }
    // By the catalog's name: h100 and h100-sxm are one GPU.
    let mut seen = std::collections::HashMap::new();
    for g in &a.gpu {
        let key = GpuSpec::lookup(&g.name).map_or_else(|_| g.name.to_ascii_lowercase(), |s| s.name.clone());
        if let Some(first) = seen.insert(key.clone(), g.name.clone()) {
            let same = if first.eq_ignore_ascii_case(&g.name) {
                String::new()
            } else {
                format!(" (as {first}: both are {key})")
            };
            bail!("--gpu {} is given twice{same}: name each GPU type once, with its price", g.name);
        }
    }
    // A split wider than the most GPUs --gpus allows could never be tried
    // (it had been clamped to 4,096, and a refusal then named that).
    for (flag, list) in [("--tp", &a.tp.0), ("--pp", &a.pp.0), ("--ep", &a.ep.0)] {
        if let Some(v) = list.iter().find(|&&v| v > u64::from(MAX_GPUS)) {
            bail!("{flag} {v}: more GPUs than the most a plan may take (--gpus at most {MAX_GPUS})");
        }
    }
    if let Some(v) = a.max_num_batched_tokens.0.iter().find(|&&v| v > u64::from(u32::MAX)) {
        bail!("--max-num-batched-tokens {v}: at most {} tokens", u32::MAX);
    }
    if a.shape.requests == Some(0) {
        bail!("--requests (-n) 0: each point needs at least 1 request");
    }
    if a.shape.arrival != crate::cli::ArrivalArg::Poisson || a.shape.burstiness.is_some() {
        bail!(
            "--arrival and --burstiness shape an open-loop (--rate) schedule, which plan does not run: its points \
             are closed loops of users (--concurrency), or a trace replayed at its own times (--trace)"
        );
    }
    Ok(())
}

/// `--load-balance-method`: SGLang's methods, each once, and only behind
/// SGLang (whose scheduler the plan then runs).
fn check_balances(a: &PlanArgs) -> Result<()> {
    let methods = &a.load_balance_method;
    if let Some(m) = crate::cli::first_repeat(methods) {
        bail!("--load-balance-method names {m} twice: give each method once");
    }
    let given: Vec<String> = methods.iter().map(LoadBalance::to_string).collect();
    if methods.iter().any(|&m| m != LoadBalance::Auto) && a.serve_engine != crate::launch::Server::Sglang {
        bail!(
            "--load-balance-method {} is SGLang's, for the ranks of its DP attention, and the plan's server is {}: \
             add --serve-engine sglang (the plan then runs SGLang's scheduler), or drop it",
            given.join(","),
            a.serve_engine.title()
        );
    }
    if methods.contains(&LoadBalance::FollowBootstrapRoom) {
        bail!(
            "--load-balance-method follow-bootstrap-room is what auto runs on a disaggregated prefill instance, and \
             a colocated configuration has no room to follow (SGLang refuses its requests): search auto, \
             round-robin, total-requests or total-tokens"
        );
    }
    Ok(())
}

/// `--mixed-chunk`: each switch once, and `on` only behind SGLang, whose
/// scheduler alone runs prompts and decodes apart.
fn check_mixed_chunk(a: &PlanArgs) -> Result<()> {
    let given = &a.mixed_chunk;
    if crate::cli::first_repeat(given).is_some() {
        bail!("--mixed-chunk names a switch twice: give off, on, or off,on");
    }
    if given.contains(&true) && a.serve_engine != crate::launch::Server::Sglang {
        bail!(
            "--mixed-chunk on is SGLang's --enable-mixed-chunk, and the plan's server is {}, whose scheduler \
             already runs a prompt chunk beside the running decodes: add --serve-engine sglang, or drop it",
            a.serve_engine.title()
        );
    }
    Ok(())
}

/// Whether a configuration's params are a dense model's replicas behind
/// round-robin or least-loaded (with a trace), or a closed loop's with
/// SGLang's method named: one SGLang server of `--dp-size`, its controller
/// routing them ([`Search::replicas_method`]).
fn dense_replicas(params: &ParamMap) -> bool {
    let (tp, ep, _, dp) = crate::launch::sizes(params);
    let (disaggregated, ranks) = (params.contains_key("pd"), ep_ranks(tp, ep));
    match params.get("router") {
        Some(r) => replicas_method(disaggregated, ranks, dp, r.parse::<RouterPolicy>().ok()).is_some(),
        None => params.contains_key("load_balance_method") && dense_replicas_of(disaggregated, ranks, dp),
    }
}

/// SGLang's method for a dense model's replicas behind `router`
/// ([`crate::launch::sglang_replicas_method`]): `None` where the
/// configuration is disaggregated, has ranks of DP attention, or one
/// replica.
fn replicas_method(disaggregated: bool, ranks: u32, dp: u32, router: Option<RouterPolicy>) -> Option<LoadBalance> {
    router.and_then(crate::launch::sglang_replicas_method).filter(|_| dense_replicas_of(disaggregated, ranks, dp))
}

/// Whether a configuration is several replicas of a dense model in one
/// server (not disaggregated, no ranks of DP attention), which SGLang's
/// controller or vLLM's front ends balance ([`Search::replicas_controller`],
/// [`Search::vllm_internal`]).
fn dense_replicas_of(disaggregated: bool, ranks: u32, dp: u32) -> bool {
    !disaggregated && ranks <= 1 && dp >= 2
}

/// The `--load-balance-method`s searched, each with what it does, as the
/// note on SGLang's scheduler says them.
fn balances_said(methods: &[LoadBalance]) -> String {
    let said: Vec<String> = methods
        .iter()
        .map(|&m| {
            let how = match m {
                LoadBalance::Auto => "the ranks in turn, on a disaggregated prefill instance by the bootstrap room",
                LoadBalance::RoundRobin => "the ranks in turn",
                LoadBalance::FollowBootstrapRoom => "by the bootstrap room",
                LoadBalance::TotalRequests => "the fewest requests, in the loads the ranks publish",
                LoadBalance::TotalTokens => "the fewest tokens held, in the loads the ranks publish",
            };
            format!("{m} ({how})")
        })
        .collect();
    match said.as_slice() {
        [one] => format!("--load-balance-method {one}"),
        _ => format!("each --load-balance-method searched: {}", said.join(", ")),
    }
}

/// The percentile the SLO judges TPOT at (else TTFT), when it names one.
fn slo_percentile(s: &Slo) -> Option<f64> {
    let of = |m: SloMetric| s.objectives.iter().find(|o| o.metric == m).map(|o| o.percentile);
    of(SloMetric::Tpot).or_else(|| of(SloMetric::Ttft))
}

/// The catalog's one id for the GPU of `--gpu` offer `offer` (`H100` and
/// `h100` are both `h100-sxm`), so the ids, params and notes of two plans
/// that spell a GPU differently are the same; the name as given where the
/// catalog has none (a plan refuses it before it gets here).
fn gpu_id(args: &PlanArgs, offer: usize) -> String {
    let name = &args.gpu[offer].name;
    GpuSpec::canonical_id(name).map_or_else(|_| name.clone(), str::to_string)
}

/// A configuration's id: the GPU's catalog id, then its splits and knobs.
/// Colocated, `tp4x2`: TP 4 a replica, two replicas (eight GPUs).
/// Disaggregated, its pools as [`pools_id`] names them.
fn id_of(search: &Search, c: &Candidate) -> String {
    let mut id = gpu_id(search.args, c.offer);
    match c.pd {
        Some(pd) => id.push_str(&pools_id(c, pd)),
        None => {
            id.push_str(&format!(" tp{}x{}", c.tp, c.dp));
            if c.pp > 1 {
                id.push_str(&format!(" pp{}", c.pp));
            }
            if c.ep > 1 {
                id.push_str(&format!(" ep{}", c.ep));
            }
        }
    }
    id.push_str(&format!(" {} mbt{}", c.precision, c.max_num_batched_tokens));
    if let Some(kv) = search.kv_named(c.kv) {
        id.push_str(&format!(" {kv}"));
    }
    if search.several_seqs {
        id.push_str(&format!(" seqs{}", c.max_num_seqs));
    }
    if c.spec > 0 {
        id.push_str(&format!(" spec{}", c.spec));
    }
    if c.balance != LoadBalance::Auto {
        id.push_str(&format!(" {}", c.balance));
    }
    if c.mixed {
        id.push_str(" mixed");
    }
    match c.activations {
        Some(Mxfp4Activations::Fp8) => id.push_str(" w4a8"),
        Some(Mxfp4Activations::Bf16) => id.push_str(" w4a16"),
        None => {}
    }
    // A unit not in lowest terms (`--pd 2:2`) is another deployment than
    // the lowest terms' units of the same pools (`1:1` twice): its ratio
    // tells the two apart.
    if let Some(pd) = c.pd.filter(|pd| gcd(pd.p, pd.d) > 1) {
        id.push_str(&format!(" pd{}:{}", pd.p, pd.d));
    }
    if search.routers.len() > 1 && c.engines() > 1 && c.pd.is_none() {
        id.push_str(&format!(" {}", c.router));
    }
    id
}

/// A disaggregated configuration's pools in its id, in GPUs as
/// InferenceMAX's charts give them: ` 4P+8D tp2` is four prefill GPUs and
/// eight decode GPUs over all its units, each instance on TP 2 (two
/// prefill and four decode instances); a decode pool's own sizes follow
/// the prefill pool's (` 3P+4D tp1+tp4`: three prefill instances of one
/// GPU, one decode instance of four; ` 8P+16D tp1 ep8+ep16`), and pipeline
/// stages are both pools' (` pp2`, counted in the GPUs). It had named the
/// units and the ratio in instances (`tp2x2 … pd1:2`), which read as GPUs
/// where an instance spans several.
fn pools_id(c: &Candidate, pd: Pools) -> String {
    let (dt, de) = pd.decode_sizes(c.tp, c.ep);
    let units = c.engines();
    let pool = |n: u32, tp: u32, ep: u32| units.saturating_mul(pool_gpus([(n, tp, ep), (0, 1, 1)], c.pp));
    let mut id = format!(" {}P+{}D tp{}", pool(pd.p, c.tp, c.ep), pool(pd.d, dt, de), c.tp);
    if dt != c.tp {
        id.push_str(&format!("+tp{dt}"));
    }
    if c.pp > 1 {
        id.push_str(&format!(" pp{}", c.pp));
    }
    if de != c.ep {
        id.push_str(&format!(" ep{}+ep{de}", c.ep));
    } else if c.ep > 1 {
        id.push_str(&format!(" ep{}", c.ep));
    }
    id
}

/// `--pd`: the ratios to search beside colocated serving (`None`), each
/// with its pools' own TPs where it names them.
fn pd_ratios(spec: Option<&str>) -> Result<Vec<Option<Pools>>> {
    let mut out = vec![None];
    let Some(spec) = spec.map(str::trim) else { return Ok(out) };
    if spec.eq_ignore_ascii_case("auto") {
        for sum in 2..=PD_AUTO_MAX {
            for p in 1..sum {
                let d = sum - p;
                if gcd(p, d) == 1 {
                    out.push(Some(Pools::ratio(p, d)));
                }
            }
        }
        return Ok(out);
    }
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let pd = Disaggregation::parse(part).map_err(|e| anyhow!("--pd {spec}: {e}"))?;
        pd.check().map_err(|e| anyhow!("--pd {spec}: {e}"))?;
        let pools = Pools {
            p: pd.prefill,
            d: pd.decode,
            prefill_tp: pd.prefill_tp,
            decode_tp: pd.decode_tp,
            prefill_ep: pd.prefill_ep,
            decode_ep: pd.decode_ep,
        };
        if out.contains(&Some(pools)) {
            bail!("--pd {spec} names {part} twice: give each ratio once");
        }
        out.push(Some(pools));
    }
    if out.len() == 1 {
        bail!("--pd {spec:?} names no ratio: give auto, or P:D ratios such as 1:1,1:2 (or 4xTP1:1xTP4)");
    }
    Ok(out)
}

/// `--kv-cache-dtype`: a list of `auto` (the activation dtype) and `fp8`,
/// each once (under its other names too: `fp8_e4m3` is `fp8`).
fn kv_cache_dtypes(spec: &str) -> Result<Vec<KvCacheDtype>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let kv: KvCacheDtype = part.parse().map_err(|e| anyhow!("--kv-cache-dtype {spec}: {e}"))?;
        if out.contains(&kv) {
            bail!("--kv-cache-dtype {spec} names {kv} twice: give each dtype once (auto, fp8 or auto,fp8)");
        }
        out.push(kv);
    }
    if out.is_empty() {
        bail!("--kv-cache-dtype {spec:?} names no dtype: give auto, fp8, or auto,fp8 to search both");
    }
    Ok(out)
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The workload's mean prompt and output lengths, where they are known
/// before it runs (not a dataset's).
fn mean_lengths(w: &Workload) -> Option<(f64, f64)> {
    match w {
        Workload::Synthetic { input, output, shared_prefix, .. } => {
            Some((input.mean() + shared_prefix.map_or(0.0, |p| f64::from(p.tokens)), output.mean()))
        }
        Workload::Trace { entries, .. } if !entries.is_empty() => {
            let n = entries.len() as f64;
            let input: f64 = entries.iter().map(|e| f64::from(e.lengths.input)).sum();
            let output: f64 = entries.iter().map(|e| f64::from(e.lengths.output)).sum();
            Some((input / n, output / n))
        }
        Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => mean_lengths(inner),
        _ => None,
    }
}

/// The cap searched behind SGLang where no `--max-num-seqs` was given: its
/// own default, resolved for each configuration ([`Search::own_cap`]).
const SGLANG_OWN_CAP: u32 = 0;

/// The prefill instances a decode instance keeps busy at saturation: a
/// request's prefill time (its prompt in budget-sized chunks, alone on an
/// instance) over its share of a decode instance's time (its output's steps
/// at the largest batch the group's cap, each rank's times its ranks, and
/// the KV cache allow, divided by that batch). The roofline's step times,
/// without the scheduler. In an
/// expert-parallel group the lone prompt runs on one attention rank (as
/// the roofline spreads a batch), in chunks of that rank's budget: SGLang's
/// DP attention gives each rank its share of the group's (it had been
/// chunked by the group's whole budget).
///
/// With `turns` above 1, a session of that many turns, summed turn by
/// turn: a later turn's prefill computes the answer before it and its own
/// question (the prefill instance's cache holds the earlier prompts, never
/// the answers, which the decode instance computed), after the history it
/// holds; its decode runs at the conversation's length; the batch is what
/// the cache holds of whole conversations.
fn pd_balance(cfg: &EngineConfig, input: f64, output: f64, turns: u32) -> Option<f64> {
    let roof = Roofline::new(cfg).ok()?;
    let (input, output) = (input.round().max(1.0) as u32, output.round().max(1.0) as u32);
    let turns = turns.clamp(1, PD_BALANCE_TURNS_MAX);
    let budget = cfg.rank_config().max_num_batched_tokens.max(1);
    let kv_fit = kv_capacity(cfg).ok()?.tokens() / (u64::from(turns) * u64::from(input + output));
    let batch = u64::from(cfg.group_max_num_seqs()).min(kv_fit).max(1) as u32;
    let (mut prefill_s, mut decode_s) = (0.0, 0.0);
    for t in 0..turns {
        // The history before this turn's fresh tokens, and those tokens.
        let (mut done, fresh) = match t {
            0 => (0, input),
            _ => (t * input + (t - 1) * output, input + output),
        };
        let end = done + fresh;
        while done < end {
            let chunk = (end - done).min(budget);
            let mut b = BatchShape::of_model(&cfg.model);
            b.add_prefill(done, chunk);
            prefill_s += roof.step_time(&b).as_secs_f64();
            done += chunk;
        }
        let mut b = BatchShape::of_model(&cfg.model);
        for _ in 0..batch {
            b.add_decode(end + output / 2);
        }
        decode_s += f64::from(output) * roof.step_time(&b).as_secs_f64() / f64::from(batch);
    }
    (decode_s > 0.0).then(|| prefill_s / decode_s)
}

/// [`pd_balance`] sums at most this many turns of a session.
const PD_BALANCE_TURNS_MAX: u32 = 64;

/// Adds `p` to a curve whose load rises, and says whether the curve ends
/// there (see [`at_the_end`]). `ttft_alone`: the point's miss of the SLO,
/// if it missed, was TTFT's alone ([`missed_ttft_alone`]).
fn climbed_to_the_end(points: &mut Vec<FrontierPoint>, p: FrontierPoint, ttft_alone: bool) -> bool {
    points.push(p);
    at_the_end(points, ttft_alone)
}

/// Whether a curve's last point ends it: throughput that rose by less than
/// [`SATURATED`] from the point before; a trace point not steady (its
/// arrivals outran the configuration: faster ones only grow the backlog);
/// or a miss of the SLO, unless it was TTFT's alone and the point before
/// met it (or it is the curve's first). TTFT need not grow with the load: with chunked prefill, more
/// users batch more prompts a step, and a 70B's TTFT at p95 read 124 ms at
/// 64 users and 115 ms at 128, so the curve that had stopped at its first
/// miss lost its best point (0.85 M good tokens per dollar, against 0.33
/// M). Two misses in a row end it, and so does one of TPOT, E2E or failed
/// requests, which only grow with the load.
fn at_the_end(points: &[FrontierPoint], ttft_alone: bool) -> bool {
    let Some(p) = points.last() else { return false };
    let before = points.len().checked_sub(2).map(|i| &points[i]);
    let missed = |q: &FrontierPoint| q.meets_slo == Some(false);
    let ended_by_miss = missed(p) && (!ttft_alone || before.is_some_and(missed));
    // A point not steady has the run's window's rate, not comparable with a
    // steady one's: it ends no climb as flat.
    let measured = |q: &FrontierPoint| q.steady != Some(false);
    let flat = measured(p)
        && before.is_some_and(|b| measured(b) && p.output_tokens_per_s < b.output_tokens_per_s * (1.0 + SATURATED));
    ended_by_miss || flat || p.extra.contains_key(UNSTEADY)
}

/// Whether `r` missed its SLO on TTFT alone: every objective it failed is
/// TTFT's, no request failed, and its share of good requests, where short,
/// is judged on TTFT limits alone. A miss the curve may climb past (see
/// [`at_the_end`]).
fn missed_ttft_alone(r: &goodput_core::RunResult, slo: Option<&Slo>, attainment: f64) -> bool {
    let (Some(rep), Some(slo)) = (r.slo.as_ref(), slo) else { return false };
    let ttft = |m: SloMetric| m == SloMetric::Ttft;
    let objectives = rep.objectives.iter().filter(|o| !o.pass).all(|o| ttft(o.metric));
    let quality = rep.quality.iter().all(|q| q.pass) && rep.unscored.is_empty();
    // The share judged (the limits', [`meets_slo`]); objectives alone judge none.
    let share_short = rep.attainment.as_ref().is_some_and(|a| a.measured < attainment || !a.pass);
    let limits = !share_short || (slo.limits.iter().all(|l| ttft(l.metric)) && slo.quality_limits.is_empty());
    objectives && quality && limits && r.summary.requests.failed == 0
}

/// Whether `slo` judges a figure of every chunk (an ITL: `itl_max`), which
/// records of their ends alone cannot give.
fn judges_chunks(slo: Option<&Slo>) -> bool {
    let itl = |m: SloMetric| m == SloMetric::ItlMax;
    slo.is_some_and(|slo| slo.limits.iter().any(|l| itl(l.metric)) || slo.objectives.iter().any(|o| itl(o.metric)))
}

impl Search<'_> {
    /// Whether a point's records may keep their first and last chunks only
    /// ([`VirtualServer::ends_only`]): a point reads TTFT, TPOT, E2E,
    /// counts and the tokens' times (its steady rate), and no ITL, unless
    /// the SLO judges one (`itl_max`).
    fn ends_only(&self) -> bool {
        !judges_chunks(self.opts.slo.as_ref())
    }

    /// The server a point of `cfg` runs on: this search's prompts, its
    /// share of memory, and records of their ends where it may.
    fn server<'c>(&self, cfg: &'c EngineConfig) -> VirtualServer<'c> {
        VirtualServer {
            engine: cfg,
            prompts: self.prompts,
            memory_limit: self.memory_limit,
            ends_only: self.ends_only(),
        }
    }

    /// The engine of one replica of `c`.
    fn engine(&self, c: &Candidate) -> EngineConfig {
        let mut cfg = EngineConfig::new(self.model.clone(), c.gpu.clone(), c.precision);
        if let Some(calibration) = self.calibrations.get(&c.gpu.family) {
            cfg.calibration = calibration.clone();
        }
        cfg.tp = c.tp;
        cfg.pp = c.pp;
        cfg.ep = c.ep;
        // Disaggregated, each instance is one group of the ranks (--dp is the pools').
        cfg.dp = if c.pd.is_some() { 1 } else { c.ranks() };
        cfg.kv_cache_dtype = c.kv;
        cfg.gpu_memory_utilization = self.args.gpu_memory_utilization;
        cfg.max_num_seqs = Some(c.max_num_seqs);
        cfg.max_num_batched_tokens = c.max_num_batched_tokens;
        cfg.pd = c.pd.map(|pd| pd.disaggregation());
        if c.pd.is_some() {
            cfg.router = simulated_router(c.router, &self.workload, self.sessions.is_some());
        }
        cfg.spec = (c.spec > 0).then(|| self.spec(c.spec));
        cfg.mxfp4_activations = c.activations;
        if self.sglang_scheduler() {
            cfg.scheduler = SchedulerPolicy::Sglang;
            cfg.load_balance = c.balance;
            // SGLang computes prompts and decodes in separate steps unless
            // started with `--enable-mixed-chunk` (off by default; on where
            // `--mixed-chunk` searches it); disaggregated instances prefill
            // or decode, never both.
            cfg.mixed_batches = c.pd.is_some() || c.mixed;
        }
        // TensorRT-LLM's own: admission that reserves each request's whole
        // answer and never evicts, limits a rank's, the KV cache a share of
        // the memory left free (its --config's free_gpu_memory_fraction).
        if self.args.serve_engine == crate::launch::Server::Trtllm {
            cfg.scheduler = SchedulerPolicy::Trtllm;
        }
        // A step ahead as the servers run by default, unless told.
        cfg.async_scheduling =
            self.args.async_scheduling || (!self.args.no_async_scheduling && cfg.servers_schedule_ahead());
        cfg
    }

    /// Resolves [`SGLANG_OWN_CAP`] to SGLang's default cap for `c`'s KV
    /// cache (its decode instances' where disaggregated: the prefill
    /// instances' one token a request never fills theirs), which its
    /// command then names: under DP attention the group's, each rank's
    /// default times its ranks (SGLang gives each rank `//` its ranks of
    /// `--max-running-requests`).
    fn own_cap(&self, c: &mut Candidate) {
        if c.max_num_seqs != SGLANG_OWN_CAP {
            return;
        }
        let mut cfg = self.engine(c);
        cfg.max_num_seqs = None;
        let decode = cfg.pool(true);
        c.max_num_seqs = decode.group_max_num_seqs().max(1);
    }

    /// Whether the configurations run SGLang's scheduler: behind SGLang.
    fn sglang_scheduler(&self) -> bool {
        self.args.serve_engine == crate::launch::Server::Sglang
    }

    /// Whether `c` runs SGLang's scheduler over ranks of DP attention (in
    /// either pool, disaggregated), among which its
    /// `--load-balance-method` picks.
    fn has_ranks(&self, c: &Candidate) -> bool {
        let ranks = c.pd.map_or_else(|| c.ranks(), |pd| pd.disaggregation().most_ranks(c.tp, c.ep));
        self.sglang_scheduler() && ranks > 1
    }

    /// The methods `c` is searched with: each of `--load-balance-method`
    /// where it has ranks to pick, else SGLang's default alone.
    fn balances(&self, c: &Candidate) -> Vec<LoadBalance> {
        match self.has_ranks(c) {
            true => self.args.load_balance_method.clone(),
            false => vec![LoadBalance::Auto],
        }
    }

    /// Behind SGLang, a dense model's replicas (one server of `--dp-size`,
    /// its command's `--load-balance-method`: [`crate::launch`]) are routed
    /// by its data-parallel controller: round-robin in turn, least-loaded as
    /// its `total-requests`, on the loads the replicas publish. `None`
    /// elsewhere (another router is replicas behind SGLang's router).
    fn replicas_controller(&self, c: &Candidate) -> Option<LoadBalance> {
        let method = replicas_method(c.pd.is_some(), c.ranks(), c.dp, Some(c.router));
        method.filter(|_| self.sglang_scheduler())
    }

    /// A KV-cache dtype as ids and notes name it, where several are
    /// searched and it is not the default: `kvfp8`.
    fn kv_named(&self, kv: KvCacheDtype) -> Option<String> {
        (self.kv_cache_dtypes.len() > 1 && kv != KvCacheDtype::Auto).then(|| format!("kv{kv}"))
    }

    /// The method of SGLang's controller a dense model's replicas are
    /// routed by, as the configuration's command sets it: the router's
    /// with a trace or sessions, which run the replicas together
    /// ([`Search::replicas_controller`]), round-robin (SGLang's default
    /// for them) in closed loops of single requests, whose users split
    /// evenly over the replicas stand for either.
    fn replicas_method(&self, c: &Candidate) -> Option<LoadBalance> {
        let method = self.replicas_controller(c)?;
        Some(if self.trace.is_some() || self.sessions.is_some() { method } else { LoadBalance::RoundRobin })
    }

    /// Behind vLLM, a dense model's replicas behind least-loaded are one
    /// server of `--data-parallel-size` ([`crate::launch`]), whose front
    /// ends balance them by their own rule (`--internal-lb`): 4 × waiting +
    /// running on the counts published every 100 ms.
    fn vllm_internal(&self, c: &Candidate) -> bool {
        self.args.serve_engine == crate::launch::Server::Vllm
            && dense_replicas_of(c.pd.is_some(), c.ranks(), c.dp)
            && c.router == RouterPolicy::LeastLoaded
    }

    /// Whether `c` is searched with each of `--mixed-chunk`: colocated
    /// under SGLang's scheduler; elsewhere once, as it runs.
    fn mixings(&self, c: &Candidate) -> Vec<bool> {
        match self.sglang_scheduler() && c.pd.is_none() {
            true => self.args.mixed_chunk.clone(),
            false => vec![false],
        }
    }

    /// The experts' activations `c` is searched with: each of
    /// `--mxfp4-activations` for an MXFP4 mixture of experts on FP4 cores
    /// (FP8 runs there alone); elsewhere once, as the server runs it (on a
    /// GPU without FP4 cores 16-bit is the only kind, and unnamed).
    fn activations(&self, c: &Candidate) -> Vec<Option<Mxfp4Activations>> {
        let searched = c.precision == Precision::Mxfp4 && self.model.moe.is_some() && c.gpu.runs_w4a8();
        match searched && !self.args.mxfp4_activations.is_empty() {
            true => self.args.mxfp4_activations.iter().map(|&a| Some(a)).collect(),
            false => vec![None],
        }
    }

    /// What `--mxfp4-activations` leaves out, said once: all of it where
    /// no MXFP4 mixture of experts is planned, its FP8 on the offered GPUs
    /// without FP4 cores (16-bit alone there). Refused where it can apply
    /// nowhere.
    fn activations_note(&self, precisions: &[Precision]) -> Result<Option<String>> {
        let given = &self.args.mxfp4_activations;
        if given.is_empty() {
            return Ok(None);
        }
        let list = given.iter().map(ToString::to_string).collect::<Vec<_>>().join(",");
        if self.model.moe.is_none() || !precisions.contains(&Precision::Mxfp4) {
            bail!(
                "--mxfp4-activations {list} is for an MXFP4 mixture of experts (GPT-OSS), and this plan has none \
                 ({} at {}): drop it, or plan such a model with --precision mxfp4",
                self.model.name,
                precisions.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
            );
        }
        let without: Vec<String> = (0..self.args.gpu.len())
            .filter(|&o| GpuSpec::lookup(&self.args.gpu[o].name).is_ok_and(|g| !g.runs_w4a8()))
            .map(|o| gpu_id(self.args, o))
            .collect();
        Ok((!without.is_empty()).then(|| {
            format!(
                "--mxfp4-activations {list}: {} {} no FP4 tensor cores, so {} MXFP4 experts run against 16-bit \
                 activations alone (W4A16), once a configuration and unnamed; the others' configurations run each \
                 kind given (ids ending in w4a8 or w4a16)",
                without.join(", "),
                if without.len() == 1 { "has" } else { "have" },
                if without.len() == 1 { "its" } else { "their" }
            )
        }))
    }

    /// Whether several methods are searched (each id and configuration of
    /// ranks then names its own).
    fn several_balances(&self) -> bool {
        self.sglang_scheduler() && self.args.load_balance_method.len() > 1
    }

    /// Speculative decoding of `tokens` drafts a step, at the plan's
    /// acceptance and draft cost.
    fn spec(&self, tokens: u32) -> SpecDecoding {
        spec_decoding(tokens, self.args.spec_acceptance, self.args.spec_draft_cost)
    }

    /// Refuses a `--pd` ratio that names a pool's EP the model cannot take:
    /// a dense model's, or one that does not divide its experts.
    fn check_pool_eps(&self, ratios: &[Option<Pools>]) -> Result<()> {
        for pd in ratios.iter().flatten() {
            for (ep, which) in [(pd.prefill_ep, "prefill"), (pd.decode_ep, "decode")] {
                let Some(ep) = ep.filter(|&e| e > 1) else { continue };
                let spec = pd.spec();
                match self.model.moe {
                    None => bail!(
                        "--pd {spec} gives the {which} pool EP {ep}, but {} is a dense model, with no experts to \
                         spread: drop the pool's EP",
                        self.model.name
                    ),
                    Some(m) if !m.num_experts.is_multiple_of(ep) => bail!(
                        "--pd {spec} gives the {which} pool EP {ep}, which does not divide {}'s {} experts: use a \
                         divisor such as 2, 4 or 8",
                        self.model.name,
                        m.num_experts
                    ),
                    Some(_) => {}
                }
            }
        }
        Ok(())
    }

    /// Under `--precision auto`: the checkpoint's own width (a config.json's
    /// `quantization_config`: AWQ's int4, say) planned beside the widths
    /// `auto` tries, and a note saying so; or a note that its scheme is not
    /// modelled and the weights are planned at the widths tried.
    fn checkpoint_precisions(&self, precisions: &mut Vec<Precision>) -> Option<String> {
        let tried = |p: &[Precision]| p.iter().map(Precision::to_string).collect::<Vec<_>>().join(", ");
        if let Some(own) = self.model.checkpoint_precision {
            if precisions.contains(&own) {
                return None;
            }
            let others = tried(precisions);
            precisions.push(own);
            return Some(format!(
                "--precision auto: {}'s checkpoint is {own} (its quantization_config), planned beside {others}, \
                 which would need a checkpoint of that width",
                self.model.name
            ));
        }
        self.model.unmodelled_quantization.as_ref().map(|q| {
            format!(
                "--precision auto: {}'s quantization_config {q} is not modelled: its weights are planned at {} \
                 instead; pass --precision with the width nearest the checkpoint's (int4, int8, fp8, fp4)",
                self.model.name,
                tried(precisions)
            )
        })
    }

    /// The configurations to simulate, in groups whose members differ in
    /// tensor parallelism and pipeline stages alone (each group runs on one
    /// thread), and what was left out, and why.
    fn groups(&self) -> Result<(Vec<Vec<Candidate>>, Vec<String>)> {
        let a = self.args;
        let mut notes = Vec::new();
        // `auto`: BF16, and FP8 and FP4 on the GPUs that have them.
        let auto = a.precision.trim().eq_ignore_ascii_case("auto");
        let spec = if auto { "bf16,fp8,fp4" } else { a.precision.as_str() };
        let names: Vec<&str> = spec.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
        let precisions: Vec<Precision> = names
            .iter()
            .map(|p| p.parse::<Precision>().map_err(|e| anyhow!("--precision: {e}")))
            .collect::<Result<_>>()?;
        if precisions.is_empty() {
            bail!("--precision names no precision: give e.g. bf16,fp8");
        }
        // Named twice: refused, as --tp 1,1 is (bf16,bf16 had been dropped
        // without a word), under its other names too (fp16 runs as bf16).
        if let Some(i) = (0..precisions.len()).find(|&i| precisions[..i].contains(&precisions[i])) {
            let first = names[precisions.iter().position(|p| *p == precisions[i]).unwrap_or(i)];
            let alias = if first.eq_ignore_ascii_case(names[i]) {
                String::new()
            } else {
                format!(" ({first} and {}: both are planned as {})", names[i], precisions[i])
            };
            bail!("--precision {spec} names {} twice{alias}: give each precision once", precisions[i]);
        }
        // FP16 runs as BF16 (it had, without a word): the same two bytes a
        // weight, and the same tensor-core rate on every GPU of the catalog.
        if let Some(p) = spec
            .split(',')
            .map(str::trim)
            .find(|p| goodput_sim::engine::FP16_NAMES.iter().any(|h| p.eq_ignore_ascii_case(h)))
        {
            notes.push(format!(
                "--precision {p} is planned as bf16: the same two bytes a weight and the same tensor-core rate on \
                 every GPU of the catalog, so its configurations are named bf16"
            ));
        }
        // Each once (bf16,bf16 had run every point twice): `auto` adds the
        // checkpoint's own width only where it tries none of it.
        let mut precisions = precisions;
        if auto {
            notes.extend(self.checkpoint_precisions(&mut precisions));
        }
        let mut tps: Vec<u32> = a.tp.0.iter().map(|&t| t as u32).collect();
        tps.sort_unstable();
        tps.dedup();
        let ratios = pd_ratios(a.pd.as_deref())?;
        let routers = self.routers.clone();
        let sorted = |l: &crate::cli::CountList| {
            let mut v: Vec<u32> = l.0.iter().map(|&x| x.min(u64::from(MAX_GPUS)) as u32).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let pps = sorted(&a.pp);
        let mut eps = sorted(&a.ep);
        if self.model.moe.is_none() && eps.iter().any(|&e| e > 1) {
            notes.push(format!("--ep: {} is a dense model, with no experts to spread; EP left out", self.model.name));
            eps = vec![1];
        }
        self.check_pool_eps(&ratios)?;
        notes.extend(self.activations_note(&precisions)?);
        if let Some(&k) = a.spec_tokens.0.iter().find(|&&k| k > 0) {
            let sd = self.spec(k);
            notes.push(format!(
                "speculative decoding (spec): each draft token accepted with chance {} when the ones before it were, \
                 the drafter costing {} of a step per draft token; these are assumptions, not measurements: real \
                 acceptance depends on the prompts and the drafter (a live server's, as bench reports it in \
                 spec_decode.acceptance_by_position, can be given with --spec-acceptance)",
                sd.acceptance, sd.draft_cost
            ));
        }
        notes.extend(self.unplaceable(&tps, &pps, &eps));
        let auto_pd = a.pd.as_deref().is_some_and(|s| s.trim().eq_ignore_ascii_case("auto"));
        let sglang = a.serve_engine == crate::launch::Server::Sglang;
        let trtllm = a.serve_engine == crate::launch::Server::Trtllm;
        // The scheduler whose kernels set what a width runs as on a GPU.
        let engine = match (sglang, trtllm) {
            (true, _) => SchedulerPolicy::Sglang,
            (_, true) => SchedulerPolicy::Trtllm,
            _ => SchedulerPolicy::Vllm,
        };
        let lengths = mean_lengths(&self.workload);
        let mut groups = Vec::new();
        let mut counted = 0;
        let mut pd_refused: Vec<String> = Vec::new();
        for (offer, o) in a.gpu.iter().enumerate() {
            let gpu = GpuSpec::lookup(&o.name).with_context(|| format!("--gpu {}", o.name))?;
            let name = gpu_id(a, offer);
            let kvs = &self.kv_cache_dtypes;
            for (precision, kv) in precisions.iter().flat_map(|&p| kvs.iter().map(move |&k| (p, k))) {
                // FP8 where the GPU has no FP8 cores: vLLM and SGLang run it
                // as weight-only FP8 (W8A16), and so does their engine;
                // TensorRT-LLM refuses it.
                if let Some(n) = crate::virtual_point::weight_only_note(engine, precision, &gpu, &name, "planned") {
                    if !notes.contains(&n) {
                        notes.push(n);
                    }
                } else if let Err(e) = gpu.peak_flops(precision) {
                    let n = format!("{precision} on {name}: left out ({e})");
                    if !auto && !notes.contains(&n) {
                        notes.push(n);
                    }
                    continue;
                }
                // The width as the notes name it: the precision, and the
                // cache's as ids name it (`fp8 kvfp8`).
                let width = match self.kv_named(kv) {
                    Some(kv) => format!("{precision} {kv}"),
                    None => precision.to_string(),
                };
                let mut given: Vec<u32> = match &a.max_num_seqs {
                    Some(m) => m.0.iter().map(|&v| v.min(u64::from(u32::MAX)) as u32).collect(),
                    None => Vec::new(),
                };
                given.sort_unstable();
                given.dedup();
                // The first pair of limits run: its notes are said once.
                let mut first = None;
                // vLLM's defaults on this GPU, each budget set on it in turn.
                let mut defaults = EngineConfig::new(self.model.clone(), gpu.clone(), precision);
                if let Some(calibration) = self.calibrations.get(&gpu.family) {
                    defaults.calibration = calibration.clone();
                }
                // TensorRT-LLM's default cap: its max_batch_size.
                if trtllm {
                    defaults.scheduler = SchedulerPolicy::Trtllm;
                }
                for &mbt in &a.max_num_batched_tokens.0 {
                    let mbt32 = mbt.min(u64::from(u32::MAX)) as u32;
                    // vLLM's default cap, held to the budget; a cap given
                    // above the budget vLLM refuses: left out, said once.
                    // SGLang takes it (its budget holds prompt chunks only), and
                    // TensorRT-LLM (its decodes then wait on the budget).
                    let seqs: Vec<u32> = match a.max_num_seqs {
                        Some(_) if sglang || trtllm => given.clone(),
                        Some(_) => given.iter().copied().filter(|&s| s <= mbt32).collect(),
                        // SGLang's own, by each configuration's cache.
                        None if sglang => vec![SGLANG_OWN_CAP],
                        None => {
                            defaults.max_num_batched_tokens = mbt32;
                            vec![defaults.resolved_max_num_seqs()]
                        }
                    };
                    if seqs.len() < given.len() {
                        let above: Vec<String> = given.iter().filter(|&&s| s > mbt32).map(u32::to_string).collect();
                        let n = format!(
                            "--max-num-seqs {} with --max-num-batched-tokens {mbt}: left out, vLLM refuses a \
                             sequence cap above the step's token budget (each running sequence takes a token of it): \
                             give caps of at most {mbt} there",
                            above.join(",")
                        );
                        if !notes.contains(&n) {
                            notes.push(n);
                        }
                    }
                    for &seq in &seqs {
                        let first = *first.get_or_insert((seq, mbt));
                        let (mut kept, left) =
                            self.balanced(&ratios, &gpu, (precision, kv), offer, seq, mbt32, lengths, !auto_pd);
                        if (seq, mbt) == first {
                            notes.extend(left);
                        }
                        if auto_pd {
                            // Each ratio kept also with its decode pool on
                            // each TP of the list, beside each prefill
                            // pool's TP, and on each wider EP of the list.
                            let plain: Vec<Pools> = kept.iter().flatten().copied().collect();
                            for pd in plain {
                                kept.extend(tps.iter().map(|&s| Some(Pools { decode_tp: Some(s), ..pd })));
                                if eps.len() > 1 {
                                    kept.extend(eps.iter().map(|&e| Some(Pools { decode_ep: Some(e), ..pd })));
                                }
                            }
                        }
                        // A ratio that names its prefill pool's TP or EP runs
                        // at that size only, in the lists or not.
                        let units = kept.iter().flat_map(|&pd| {
                            let eps = match pd.and_then(|p| p.prefill_ep) {
                                Some(e) => vec![e],
                                None => eps.clone(),
                            };
                            eps.into_iter().map(move |ep| (pd, ep))
                        });
                        for ((pd, ep), &router) in units.flat_map(|u| routers.iter().map(move |r| (u, r))) {
                            // Disaggregated pools are routed by the router their
                            // script starts, cache_aware (prefix-aware) in each
                            // pool, vllm-router's and SGLang's default: no
                            // router to choose.
                            if pd.is_some() && router != routers[0] {
                                continue;
                            }
                            // Pools are routed by their script's router: the
                            // cache_aware policy of vLLM's and SGLang's,
                            // TensorRT-LLM's load_balancing.
                            let routed = match pd {
                                Some(_) if a.serve_engine == crate::launch::Server::Trtllm => RouterPolicy::LeastLoaded,
                                Some(_) => RouterPolicy::PrefixAware,
                                None => router,
                            };
                            let mut group = Vec::new();
                            let group_tps = match pd.and_then(|p| p.prefill_tp) {
                                Some(t) => vec![t],
                                None => tps.clone(),
                            };
                            for &tp in &group_tps {
                                let pd = match pd {
                                    // `auto`'s decode TP equal to this one (the
                                    // plain ratio, searched already), or beside
                                    // EP (with EP, `auto` widens the decode
                                    // pool's EP, not its TP); its decode EP
                                    // no wider than this.
                                    Some(pools)
                                        if auto_pd
                                            && (pools.decode_tp.is_some_and(|d| d == tp || ep > 1)
                                                || pools.decode_ep.is_some_and(|d| d <= ep)) =>
                                    {
                                        continue
                                    }
                                    Some(pools) => match pools.at(tp, ep) {
                                        Some(at) => Some(at),
                                        None => continue,
                                    },
                                    None => None,
                                };
                                let unit = pd.map_or(tp, |pd| pd.gpus(tp, 1, 1));
                                if unit > a.budget || (router != routers[0] && a.budget / unit < 2) {
                                    continue;
                                }
                                let made = self.stages(offer, &gpu, (precision, kv), tp, ep, &pps, seq, mbt32, pd);
                                match made {
                                    Some(Ok((mut cs, past_cache))) => {
                                        if let Some(n) = past_cache.filter(|_| pd.is_none()) {
                                            let ep = if ep > 1 { format!(" ep{ep}") } else { String::new() };
                                            let n = format!("{name} tp{tp}{ep} {width} {n}");
                                            if !notes.contains(&n) {
                                                notes.push(n);
                                            }
                                        }
                                        // One engine has no router to choose: it runs
                                        // under the first router alone (its stages and
                                        // expert-parallel ranks count, not only its TP:
                                        // a single-replica `pp8` had run once a router,
                                        // the same id and points twice).
                                        if router != routers[0] {
                                            cs.retain(|c| c.engines() > 1);
                                        }
                                        // Several expert-parallel groups are a server
                                        // a group behind the router, whose policy
                                        // for least-loaded is power_of_two: predicted
                                        // so (once, where both are tried).
                                        let router_of = |c: &Candidate| match routed {
                                            RouterPolicy::LeastLoaded
                                                if pd.is_none()
                                                    && crate::launch::groups_apart(
                                                        a.serve_engine,
                                                        c.tp,
                                                        c.ep,
                                                        c.dp,
                                                    ) =>
                                            {
                                                RouterPolicy::PowerOfTwo
                                            }
                                            r => r,
                                        };
                                        cs.retain(|c| router_of(c) == routed || !routers.contains(&router_of(c)));
                                        // Each draft length of --spec-tokens, and
                                        // under SGLang's DP attention each
                                        // --load-balance-method.
                                        for &spec in &a.spec_tokens.0 {
                                            for c in &cs {
                                                for balance in self.balances(c) {
                                                    for mixed in self.mixings(c) {
                                                        for activations in self.activations(c) {
                                                            counted += 1;
                                                            group.push(Candidate {
                                                                router: router_of(c),
                                                                spec,
                                                                balance,
                                                                mixed,
                                                                activations,
                                                                ..c.clone()
                                                            });
                                                        }
                                                    }
                                                }
                                            }
                                        }
                                        // Past the cap a search runs for hours and
                                        // holds gigabytes (1,000 × 1,000 batch
                                        // limits had): refused before it starts.
                                        if counted > MAX_CONFIGURATIONS {
                                            bail!(
                                                "these lists make more than {MAX_CONFIGURATIONS} configurations, \
                                                 the most one plan searches: shorten them (--gpu, --precision, \
                                                 --tp, --pp, --ep, --pd, --max-num-seqs, \
                                                 --max-num-batched-tokens, --kv-cache-dtype, --spec-tokens, \
                                                 --load-balance-method, --mixed-chunk, --mxfp4-activations), \
                                                 e.g. powers of two of \
                                                 the batch limits"
                                            );
                                        }
                                    }
                                    // A disaggregated unit's own reason (a pool's TP
                                    // that does not divide the heads, say): said if
                                    // no ratio runs (it had read "no ratio fit the
                                    // budget ... raise --gpus" with the unit well
                                    // inside it).
                                    Some(Err(e)) if pd.is_some() => {
                                        let why = format!("{name} tp{tp} {width}: {e:#}");
                                        if !pd_refused.contains(&why) {
                                            pd_refused.push(why);
                                        }
                                    }
                                    // Said once per GPU, precision and TP, not per limit.
                                    Some(Err(e)) if (seq, mbt) == first && pd.is_none() && router == routers[0] => {
                                        let ep = if ep > 1 { format!(" ep{ep}") } else { String::new() };
                                        // Once where each cache dtype leaves it out alike
                                        // (weights that do not fit).
                                        let why = format!("left out ({e:#})");
                                        let said = format!("{name} tp{tp}{ep} {precision}");
                                        if !notes.iter().any(|n| n.starts_with(&said) && n.ends_with(&why)) {
                                            notes.push(format!("{name} tp{tp}{ep} {width}: {why}"));
                                        }
                                    }
                                    _ => {}
                                }
                            }
                            if !group.is_empty() {
                                groups.push(group);
                            }
                        }
                    }
                }
            }
        }
        if tps.iter().all(|&t| t > a.budget) {
            bail!("every --tp degree is above the budget of {} GPUs (--gpus): give a smaller --tp", a.budget);
        }
        if let Some(spec) = a.pd.as_deref().filter(|_| !auto_pd) {
            if !groups.iter().flatten().any(|c| c.pd.is_some()) && !pd_refused.is_empty() {
                notes.push(format!(
                    "--pd {spec}: no ratio was simulated: {}",
                    pd_refused.iter().take(4).cloned().collect::<Vec<_>>().join("; ")
                ));
            } else if !groups.iter().flatten().any(|c| c.pd.is_some()) {
                notes.push(format!(
                    "--pd {spec}: no ratio fit the budget of {} GPUs (--gpus) at any --tp, so none was simulated: \
                     raise --gpus, or give smaller pools",
                    a.budget
                ));
            }
        }
        Ok((groups, notes))
    }

    /// A note for each `--ep` size, and for the fewest `--pp` stages, that
    /// no configuration can take, with the fix: an EP that does not divide
    /// the model's experts or is a multiple of no `--tp`, and groups or
    /// replicas that need more GPUs than the budget at every TP. The search
    /// skips them (see [`Search::stages`]); said here once a flag's
    /// value, not once a TP.
    fn unplaceable(&self, tps: &[u32], pps: &[u32], eps: &[u32]) -> Vec<String> {
        let budget = self.args.budget;
        let Some(&pp) = pps.first() else { return Vec::new() };
        let stages = if pp > 1 { format!(" at --pp {pp}") } else { String::new() };
        let tps: Vec<u32> = tps.iter().copied().filter(|&t| t <= budget).collect();
        let mut notes = Vec::new();
        for &ep in eps {
            if ep > 1 {
                if let Some(m) = self.model.moe.filter(|m| !m.num_experts.is_multiple_of(ep)) {
                    let some: Vec<String> = (2..=m.num_experts)
                        .filter(|d| m.num_experts.is_multiple_of(*d))
                        .take(3)
                        .map(|d| d.to_string())
                        .collect();
                    notes.push(format!(
                        "--ep {ep} does not divide {}'s {} experts; EP {ep} left out: give a divisor of {}, such as {}",
                        self.model.name,
                        m.num_experts,
                        m.num_experts,
                        some.join(", ")
                    ));
                    continue;
                }
            }
            let paired: Vec<u32> = tps.iter().copied().filter(|&t| ep <= 1 || ep.is_multiple_of(t)).collect();
            let Some(unit) = paired.iter().map(|&t| t.saturating_mul(pp).saturating_mul(ep_ranks(t, ep))).min() else {
                if ep > 1 && !tps.is_empty() {
                    let list: Vec<String> = tps.iter().map(u32::to_string).collect();
                    notes.push(format!(
                        "--ep {ep} is a multiple of no --tp within the budget ({}): an expert-parallel group spans \
                         whole tensor-parallel groups; EP {ep} left out: give a --tp that divides {ep}",
                        list.join(", ")
                    ));
                }
                continue;
            };
            if unit <= budget {
                continue;
            }
            notes.push(if ep > 1 {
                format!(
                    "--ep {ep}{stages} needs {unit} GPUs an expert-parallel group, over the budget of {budget} \
                     (--gpus): lower --ep{} or raise --gpus",
                    if pp > 1 { " or --pp," } else { "" }
                )
            } else {
                format!(
                    "--pp {pp} needs {unit} GPUs a replica (at TP {}), over the budget of {budget} (--gpus): lower \
                     --pp or raise --gpus",
                    paired[0]
                )
            });
        }
        notes
    }

    /// The configurations of `tp` (and EP size `ep`, and disaggregated pools
    /// `pd` of instances that are each such a replica), one for each of
    /// `pps` pipeline stages that fit the budget and hold the model, or why
    /// the fewest does not; `None` where `ep` cannot go with `tp` or the
    /// budget (said once a flag's value by [`Search::unplaceable`]).
    #[allow(clippy::too_many_arguments)]
    fn stages(
        &self,
        offer: usize,
        gpu: &GpuSpec,
        (precision, kv): (Precision, KvCacheDtype),
        tp: u32,
        ep: u32,
        pps: &[u32],
        seq: u32,
        mbt: u32,
        pd: Option<Pools>,
    ) -> Option<Result<(Vec<Candidate>, Option<String>)>> {
        let experts = self.model.moe.map_or(1, |m| m.num_experts);
        let pairs = |tp: u32, ep: u32| ep <= 1 || (ep.is_multiple_of(tp) && experts.is_multiple_of(ep));
        if !pairs(tp, ep)
            || pd.is_some_and(|pd| {
                let (dt, de) = pd.decode_sizes(tp, ep);
                !pairs(dt, de)
            })
        {
            return None;
        }
        let ranks = ep_ranks(tp, ep);
        let mut last: Option<(Candidate, anyhow::Error)> = None;
        let mut fitted = Vec::new();
        // The shallowest depth left out for a KV cache too small for the
        // workload's request, said where deeper ones are simulated (it had
        // run, every request failing; a depth whose weights do not fit
        // goes unsaid, as the model's size tells it).
        let mut past_cache: Option<String> = None;
        for &pp in pps {
            // More stages than layers is no pipeline: the reason of the
            // stages before it (a KV block too large, say) is the one to
            // give, not that.
            if pp > self.model.num_layers {
                break;
            }
            let unit = pd.map_or(tp.saturating_mul(pp).saturating_mul(ranks), |pd| pd.gpus(tp, ep, pp));
            if unit > self.args.budget {
                break;
            }
            // Whole expert-parallel groups (whole disaggregated units) fill
            // the budget; `dp` counts the units' prefill-pool ranks.
            let dp = self.args.budget / unit * ranks;
            let mut c = Candidate {
                tp,
                dp,
                pp,
                ep,
                max_num_seqs: seq,
                max_num_batched_tokens: mbt,
                pd,
                ..self.base(offer, gpu, precision, kv)
            };
            self.own_cap(&mut c);
            match self.fits(&c) {
                // Every depth that fits: a deeper pipeline gives no speed,
                // but halves the weights on each GPU, and the cache that
                // frees can win at many users (a 70B that only just fits
                // on two stages of TP 1 ran 24 tokens/s a GPU where four
                // stages ran 611; at TP 2 in FP8, where two stages leave
                // a cache only 16% smaller than four, four were still the
                // best per dollar within the SLO).
                Ok(()) => fitted.push(c),
                Err(e) if fitted.is_empty() => {
                    if past_cache.is_none() && e.downcast_ref::<RequestPastCache>().is_some() {
                        past_cache = Some(format!("pp{pp}: left out ({e})"));
                    }
                    last = Some((c, e));
                }
                Err(_) => {}
            }
        }
        if !fitted.is_empty() {
            let past_cache = past_cache.map(|n| format!("{n}; deeper pipelines, whose caches hold it, are simulated"));
            return Some(Ok((fitted, past_cache)));
        }
        last.map(|(c, e)| Err(self.unfit(&c, e)))
    }

    /// Why `c`, the most stages of its TP the budget allows, was left out:
    /// its pipeline degree and GPUs named (the engine's message names its
    /// TP alone), and for weights or a KV block that do not fit, only what
    /// the budget allows, else the smallest `--gpus` that holds the model
    /// (the engine's own hints had named a --tp 16 over a budget of 8).
    fn unfit(&self, c: &Candidate, e: anyhow::Error) -> anyhow::Error {
        let unit =
            c.pd.map_or(c.tp.saturating_mul(c.pp).saturating_mul(ep_ranks(c.tp, c.ep)), |pd| pd.gpus(c.tp, c.ep, c.pp));
        let at = format!("at --pp {} ({unit} GPU{} a replica)", c.pp, if unit == 1 { "" } else { "s" });
        let (detail, mut options) = match e.downcast_ref::<goodput_sim::engine::Error>() {
            Some(goodput_sim::engine::Error::ModelDoesNotFit {
                model,
                precision,
                gpu,
                weights_gib,
                budget_gib,
                gpu_memory_utilization,
                ..
            }) => (
                format!(
                    "{model} in {precision} does not fit on {gpu}: the weights take {weights_gib:.1} GiB per GPU, \
                     but {gpu_memory_utilization} of its memory minus activations and runtime leaves {}",
                    if *budget_gib > 0.0 {
                        format!("only {budget_gib:.1} GiB")
                    } else {
                        format!("none ({:.1} GiB short before the weights)", -budget_gib)
                    }
                ),
                Vec::new(),
            ),
            // The engine's words, its hints kept but those that size the
            // replica (the budget bounds those: see `fit_fix`).
            Some(err @ goodput_sim::engine::Error::KvBlockDoesNotFit { suggestion, .. }) => {
                let text = err.to_string();
                let detail = text.strip_suffix(suggestion.as_str()).unwrap_or(&text).trim_end_matches([';', ' ']);
                let sized = ["--tp", "--pp", "--ep", "--precision", "--gpu-memory-utilization"];
                let kept = suggestion
                    .trim_start_matches("try ")
                    .split(", or ")
                    .filter(|o| !sized.iter().any(|s| o.starts_with(s)) && !o.contains("more memory"))
                    .map(str::to_string)
                    .collect();
                (detail.to_string(), kept)
            }
            // A cache too small for the workload's request: what holds it,
            // or shorter requests.
            _ if e.downcast_ref::<RequestPastCache>().is_some() => {
                let mut kept = Vec::new();
                if c.kv == KvCacheDtype::Auto {
                    let mut fp8 = self.engine(c);
                    fp8.kv_cache_dtype = KvCacheDtype::Fp8;
                    if self.request_room(&fp8).is_ok() {
                        kept.push("--kv-cache-dtype fp8".to_string());
                    }
                }
                (e.to_string(), kept)
            }
            // Not a matter of memory (a TP that does not divide the heads):
            // the stages tried say nothing of it (it had read "at --pp 2").
            _ => return e,
        };
        options.extend(self.fit_fix(c));
        if e.downcast_ref::<RequestPastCache>().is_some() {
            options
                .push(if self.sessions.is_some() { "fewer turns or shorter ones" } else { "shorter requests" }.into());
        }
        let fix = match options.len() {
            0 => format!("no TP × PP within the plan's reach ({MAX_GPUS} GPUs) holds it: offer a GPU with more memory"),
            // A flag is given; "raise --gpus to N" says its own verb ("give
            // raise --gpus" had been printed).
            _ => options
                .iter()
                .map(|o| if o.starts_with("--") { format!("give {o}") } else { o.clone() })
                .collect::<Vec<_>>()
                .join(", or "),
        };
        anyhow!("{at}: {detail}; {fix}")
    }

    /// What would make `c`'s model fit, within the plan's reach: a higher
    /// `--gpu-memory-utilization`, a narrower precision, or the fewest GPUs
    /// a replica of its TP or wider with more stages needs (a `--gpus` to
    /// raise the budget to, with the `--tp`/`--pp` to add where the lists
    /// lack them).
    fn fit_fix(&self, c: &Candidate) -> Vec<String> {
        let a = self.args;
        let holds =
            |cfg: &EngineConfig| cfg.validate().is_ok() && kv_capacity(cfg).is_ok() && self.request_room(cfg).is_ok();
        let fits = |d: &Candidate| holds(&self.engine(d));
        let mut options = Vec::new();
        let mut fuller = self.engine(c);
        let share = fuller.memory_share();
        let fullest = fuller.fullest_share();
        fuller.gpu_memory_utilization = Some(fullest);
        if share < fullest && holds(&fuller) {
            options.push(format!("--gpu-memory-utilization {fullest}"));
        }
        let narrower = Precision::ALL
            .into_iter()
            .filter(|p| p.bytes_per_weight() < c.precision.bytes_per_weight() && c.gpu.peak_flops(*p).is_ok())
            .find(|&p| fits(&Candidate { precision: p, ..c.clone() }));
        if let Some(p) = narrower {
            options.push(format!("--precision {p}"));
        }
        let layers = self.model.num_layers;
        let ranks = ep_ranks(c.tp, c.ep);
        // An expert-parallel group of several ranks: one rank over the same
        // GPUs (TP as wide as EP) pools their caches for each request.
        if ranks > 1 && c.pd.is_none() && fits(&Candidate { tp: c.ep, dp: c.dp / ranks, ..c.clone() }) {
            let ep = c.ep;
            let one =
                format!("one attention rank over the group's {ep} GPUs, whose caches then hold each request together");
            options.push(match a.tp.0.contains(&u64::from(ep)) {
                true => format!("TP {ep} with EP {ep}, which the search runs ({one})"),
                false => format!("add --tp {ep} (TP {ep} with EP {ep}: {one})"),
            });
            return options;
        }
        let wider = std::iter::successors(Some(c.tp.saturating_mul(c.pp).saturating_mul(ranks) * 2), |&n| {
            (n < MAX_GPUS).then_some(n * 2)
        })
        .find_map(|n| {
            // The --tp list's degrees first (widest first), then up to 8.
            let listed = |t: u32| a.tp.0.contains(&u64::from(t));
            let mut tps: Vec<u32> = std::iter::successors(Some(c.tp), |&t| (t < 8).then_some(t * 2))
                .chain(a.tp.0.iter().map(|&t| t.min(u64::from(MAX_GPUS)) as u32).filter(|&t| t >= c.tp))
                .filter(|t| n % t == 0)
                .collect();
            tps.sort_unstable_by_key(|&t| (!listed(t), std::cmp::Reverse(t)));
            tps.dedup();
            tps.into_iter().find_map(|tp| {
                let pp = n / tp.saturating_mul(ep_ranks(tp, c.ep));
                let d = Candidate { tp, pp, ..c.clone() };
                (pp >= 1 && pp <= layers && c.pd.is_none() && fits(&d)).then_some((n, tp, pp))
            })
        });
        if let Some((n, tp, pp)) = wider {
            let mut add = Vec::new();
            if !a.tp.0.contains(&u64::from(tp)) {
                add.push(format!("--tp {tp}"));
            }
            if !a.pp.0.contains(&u64::from(pp)) {
                add.push(format!("--pp {pp}"));
            }
            if n <= a.budget {
                // Within the budget, but the lists left it out (a KV cache
                // too small for the workload's request at `--pp 1`, say):
                // add them (it had said "raise --gpus to 2" of a budget of 4).
                if !add.is_empty() {
                    options.push(format!("add {} (TP {tp} × PP {pp} holds it)", add.join(" ")));
                }
            } else {
                let add = if add.is_empty() { String::new() } else { format!(" and add {}", add.join(" ")) };
                options.push(format!(
                    "raise --gpus to {n}{add} (no TP × PP within {} GPUs holds it; TP {tp} × PP {pp} does)",
                    a.budget
                ));
            }
        }
        options
    }

    /// Whether `c`'s weights leave its GPUs room for a KV cache, its
    /// longest request fits the model's context, and that cache holds it
    /// ([`Search::request_room`]); why not, when not.
    fn fits(&self, c: &Candidate) -> Result<()> {
        let cfg = self.engine(c);
        kv_capacity(&cfg)?;
        if c.pd.is_some_and(|pd| pd.decode_tp.is_some() || pd.decode_ep.is_some()) {
            kv_capacity(&cfg.pool(true)).context("the decode pool")?;
        }
        crate::virtual_point::check_context_of(&cfg, &self.workload, self.prompts, "choose another model", false)?;
        Ok(self.request_room(&cfg)?)
    }

    /// Whether `cfg`'s KV cache holds the workload's typical request (the
    /// one the context check takes, with what the chat template adds):
    /// a replica's cache its prompt and output; disaggregated, a prefill
    /// instance's its prompt and first token and a decode instance's the
    /// whole. The engine refuses a request past its cache, so a replica
    /// whose cache holds less fails each such request (a single L4 in
    /// BF16, 8,128 tokens of cache, had failed all of long-document's
    /// requests of about 10,000 and been listed as run). A dataset's
    /// requests are their own: not checked. With sessions, the typical
    /// session's last turn (its median turns): its prompt holds every
    /// question and answer before it, and the cache must hold it whole
    /// while it decodes (a first turn alone had been checked, and a later
    /// turn past the cache failed every session at it).
    fn request_room(&self, cfg: &EngineConfig) -> Result<(), RequestPastCache> {
        let Some((input, output, mut flags)) = crate::virtual_point::typical_request(&self.workload) else {
            return Ok(());
        };
        let turns = match self.sessions.as_ref().map(|s| &s.turns) {
            Some(goodput_load::workload::Turns::Drawn(d)) => u64::from(d.median().max(1)),
            _ => 1,
        };
        if turns > 1 {
            flags.push_str(&format!(" in sessions of {turns} turns (its last turn, the conversation so far)"));
        }
        let history = (turns - 1).saturating_mul(input + output);
        let prompt = history + input + u64::from(self.prompts.first_turn_extra(cfg.chat_template));
        // An expert-parallel group's ranks each keep their own cache and
        // run a request whole: one rank's share must hold it.
        let pools = match cfg.pd {
            Some(_) => vec![
                (
                    cfg.pool(false),
                    prompt + 1,
                    ["a prefill instance's cache", "one attention rank of a prefill instance"],
                ),
                (
                    cfg.pool(true),
                    prompt + output,
                    ["a decode instance's cache", "one attention rank of a decode instance"],
                ),
            ],
            None => vec![(cfg.clone(), prompt + output, ["its replica's cache", "one attention rank of its replica"])],
        };
        for (pool, need, [whose, rank]) in pools {
            // A cache that does not fit at all is said by `fits` itself.
            let Ok(cap) = kv_capacity(&pool) else { continue };
            let ranks = pool.attention_ranks().max(1);
            let holds = cap.tokens() / u64::from(ranks);
            if need > holds {
                let whose = if ranks > 1 { rank } else { whose };
                return Err(RequestPastCache { flags, prompt, output, need, whose, holds });
            }
        }
        Ok(())
    }

    fn base(&self, offer: usize, gpu: &GpuSpec, precision: Precision, kv: KvCacheDtype) -> Candidate {
        Candidate {
            offer,
            gpu: gpu.clone(),
            precision,
            kv,
            tp: 1,
            dp: self.args.budget,
            pp: 1,
            ep: 1,
            max_num_seqs: 1,
            max_num_batched_tokens: 8192,
            pd: None,
            router: RouterPolicy::LeastLoaded,
            spec: 0,
            balance: LoadBalance::Auto,
            mixed: false,
            activations: None,
        }
    }

    /// The ratios worth simulating for one GPU, precision and limits, and
    /// a note for each left out: those whose P/D lies more than
    /// [`PD_BALANCE_BAND`] from the workload's balance (the nearest ratio is
    /// always kept). All of them where the balance cannot be told, and
    /// where `named` (the ratios are the user's own list, not `auto`'s):
    /// those far from the balance then run, with a note that they are
    /// unbalanced (an explicit 3:1 had been dropped, with no way to run it).
    #[allow(clippy::too_many_arguments)]
    fn balanced(
        &self,
        ratios: &[Option<Pools>],
        gpu: &GpuSpec,
        (precision, kv): (Precision, KvCacheDtype),
        offer: usize,
        seq: u32,
        mbt: u32,
        lengths: Option<(f64, f64)>,
        named: bool,
    ) -> (Vec<Option<Pools>>, Vec<String>) {
        // A ratio that names a pool's TP is the user's own: always kept.
        let (sized, pds): (Vec<Pools>, Vec<Pools>) = ratios.iter().flatten().partition(|pd| pd.names_sizes());
        let mut c =
            Candidate { max_num_seqs: seq, max_num_batched_tokens: mbt, ..self.base(offer, gpu, precision, kv) };
        self.own_cap(&mut c);
        let balance = lengths.and_then(|(i, o)| pd_balance(&self.engine(&c), i, o, self.mean_turns()));
        let Some(r) = balance.filter(|r| r.is_finite() && *r > 0.0) else { return (ratios.to_vec(), Vec::new()) };
        let off = |pd: Pools| (f64::from(pd.p) / f64::from(pd.d) / r).ln().abs();
        let nearest = pds.iter().copied().min_by(|a, b| off(*a).total_cmp(&off(*b)));
        let mut kept: Vec<Option<Pools>> = vec![None];
        kept.extend(sized.into_iter().map(Some));
        let mut notes = Vec::new();
        for pd in pds {
            let idle = if f64::from(pd.p) / f64::from(pd.d) > r { "prefill" } else { "decode" };
            if off(pd) <= PD_BALANCE_BAND.ln() || Some(pd) == nearest {
                kept.push(Some(pd));
            } else if named {
                kept.push(Some(pd));
                notes.push(format!(
                    "{} {precision}: --pd {}:{} is simulated as named, though out of balance: a request's prefill \
                     takes about {r:.2} times its share of a decode instance, so its {idle} pool idles much of the \
                     time",
                    gpu_id(self.args, offer),
                    pd.p,
                    pd.d
                ));
            } else {
                notes.push(format!(
                    "{} {precision}: --pd {}:{} left out: a request's prefill takes about {r:.2} times its share of a \
                     decode instance, so that ratio's {idle} pool would idle most of the time",
                    gpu_id(self.args, offer),
                    pd.p,
                    pd.d
                ));
            }
        }
        (kept, notes)
    }

    /// Runs every group on `--jobs` threads, and gives the configurations
    /// in a stable order (the groups', then TP), each with the index of the
    /// configuration whose curve it is a prefix of, when it is one.
    fn run(&self, groups: Vec<Vec<Candidate>>) -> Vec<(FrontierConfig, Option<usize>)> {
        let jobs = jobs(self.args);
        // The widest batch limit of each (GPU, precision, budget, TP) is
        // simulated; the narrower ones are its prefixes.
        let widest = |c: &Candidate| {
            if self.trace.is_some() || self.thinks() {
                // An open load, or users past the limit who think between
                // turns, can meet any batch limit: each is simulated.
                return c.max_num_seqs;
            }
            groups
                .iter()
                .flatten()
                .filter(|o| {
                    o.offer == c.offer
                        && o.precision == c.precision
                        && o.kv == c.kv
                        && o.tp == c.tp
                        && o.pp == c.pp
                        && o.ep == c.ep
                        && o.max_num_batched_tokens == c.max_num_batched_tokens
                        && o.pd == c.pd
                        && o.router == c.router
                })
                .map(|o| o.max_num_seqs)
                .max()
                .unwrap_or(c.max_num_seqs)
        };
        let work: Vec<(usize, &Vec<Candidate>)> =
            groups.iter().enumerate().filter(|(_, g)| g.iter().all(|c| c.max_num_seqs == widest(c))).collect();
        let next = Mutex::new(0usize);
        // Configurations simulated so far, of those to simulate: each line
        // of progress counts them, for a search that runs minutes.
        let total: usize = work.iter().map(|(_, g)| g.len()).sum();
        let simulated = std::sync::atomic::AtomicUsize::new(0);
        let done: Mutex<Vec<(usize, Vec<FrontierConfig>)>> = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..jobs.min(work.len()).max(1) {
                s.spawn(|| loop {
                    let i = {
                        let mut n = next.lock().expect("no thread panics holding it");
                        let i = *n;
                        *n += 1;
                        i
                    };
                    let Some(&(gi, group)) = work.get(i) else { break };
                    if self.interrupted() {
                        self.cut_short.store(true, Ordering::SeqCst);
                        break;
                    }
                    let out = self.run_group(group);
                    if !self.args.quiet {
                        for c in &out {
                            let k = simulated.fetch_add(1, Ordering::SeqCst) + 1;
                            goodput_core::tell!("[{k}/{total}] {}: {}", c.id, plural(c.points.len(), "point"));
                        }
                    }
                    done.lock().expect("no thread panics holding it").push((gi, out));
                });
            }
        });
        let mut done = done.into_inner().expect("the threads have ended");
        done.sort_by_key(|d| d.0);
        let mut out: Vec<(FrontierConfig, Option<usize>)> = Vec::new();
        for (_, group) in done {
            out.extend(group.into_iter().map(|c| (c, None)));
        }
        // The narrower limits, pointing at their widest's configuration.
        for group in &groups {
            for c in group.iter().filter(|c| c.max_num_seqs != widest(c)) {
                let w = widest(c);
                let full = out.iter().position(|(o, _)| {
                    o.id == id_of(self, &Candidate { max_num_seqs: w, ..c.clone() }) && o.status == ConfigStatus::Ok
                });
                let Some(full) = full else { continue };
                // Its points are the widest's first ones: not repeated
                // (the same points twice would both be on the frontier).
                let mut fc = self.config(c);
                // A stop that cut the widest's curve before this limit's
                // last load cut this one's too.
                let widest = &out[full].0;
                let reached = widest.points.last().map_or(0.0, |p| p.load.value());
                let wanted = (self.batch_limit(c) * u64::from(c.engines())) as f64;
                if widest.extra.get(CUT).and_then(|v| v.as_str()) == Some(INTERRUPTED_CUT) && reached < wanted {
                    fc.extra.insert(CUT.into(), INTERRUPTED_CUT.into());
                }
                out.push((fc, Some(full)));
            }
        }
        out
    }

    fn config(&self, c: &Candidate) -> FrontierConfig {
        let mut params: BTreeMap<String, String> = [
            ("gpu", gpu_id(self.args, c.offer)),
            ("tp", c.tp.to_string()),
            ("dp", c.dp.to_string()),
            ("precision", c.precision.to_string()),
            ("kv_cache_dtype", c.kv.to_string()),
            ("max_num_seqs", c.max_num_seqs.to_string()),
            ("max_num_batched_tokens", c.max_num_batched_tokens.to_string()),
        ]
        .into_iter()
        .chain(c.pd.map(|pd| ("pd", pd.spec())))
        // The router where a trace routes among replicas, or where it is not
        // the default (several expert-parallel groups' power_of_two; pools'
        // prefix-aware where a pool has several instances), so that the
        // grid's own prediction and the command agree.
        .chain(
            match c.pd {
                None => c.engines() > 1 && (self.trace.is_some() || c.router != RouterPolicy::default()),
                Some(pd) => c.engines() * pd.p.max(pd.d) > 1,
            }
            .then(|| ("router", c.router.to_string())),
        )
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        // Named only where on, so a plan without them reads as before.
        for (k, v) in [("pp", c.pp), ("ep", c.ep)] {
            if v > 1 {
                params.insert(k.into(), v.to_string());
            }
        }
        // The scheduler and steps the engine runs the configuration with
        // ([`Search::engine`]), so that the grid's --estimate runs them too.
        let cfg = self.engine(c);
        if cfg.scheduler == SchedulerPolicy::Trtllm {
            params.insert("scheduler".into(), "trtllm".into());
        }
        if cfg.scheduler == SchedulerPolicy::Sglang {
            params.insert("scheduler".into(), "sglang".into());
            // Named where SGLang's steps are its own default (apart), and
            // where `--mixed-chunk on` mixed them, which its command then
            // turns on.
            if !cfg.mixed_batches {
                params.insert("mixed_batches".into(), "false".into());
            } else if c.mixed {
                params.insert("mixed_batches".into(), "true".into());
            }
            // SGLang's own flag and spelling, which its command and a grid
            // take: where not its default, or where the search tried
            // several (so a grid's configurations tell them apart).
            if self.has_ranks(c) && (c.balance != LoadBalance::Auto || self.several_balances()) {
                params.insert("load_balance_method".into(), c.balance.sglang_name());
            }
            // A dense model's replicas are one server of --dp-size, routed
            // by SGLang's controller: with a trace by the router's method
            // (`trace_curve` ran it), in closed loops by SGLang's default
            // there, round-robin (their users split evenly stand for it).
            // Named, so that the command sets it and a grid's own
            // --estimate runs it too.
            if let Some(m) = self.replicas_method(c) {
                params.insert("load_balance_method".into(), m.sglang_name());
            }
        }
        // vLLM's replicas behind least-loaded are one server of
        // --data-parallel-size, balanced by its own front ends (with a trace
        // `trace_curve` ran them; closed loops split their users evenly):
        // named, so that a grid's own --estimate runs them too.
        if self.vllm_internal(c) {
            params.insert("internal_lb".into(), "true".into());
        }
        // The experts' activations where searched, which the command sets
        // and a grid's own --estimate runs.
        if let Some(a) = c.activations {
            params.insert("mxfp4_activations".into(), a.to_string());
        }
        // A step ahead where it is not the servers' default, and none where
        // it is: each command then says so (vLLM's --async-scheduling or
        // --no-async-scheduling, SGLang's --disable-overlap-schedule,
        // TensorRT-LLM's disable_overlap_scheduler), and a grid's own
        // --estimate runs it.
        if cfg.async_scheduling != cfg.servers_schedule_ahead() {
            params.insert("async_scheduling".into(), cfg.async_scheduling.to_string());
        }
        if c.spec > 0 {
            let sd = self.spec(c.spec);
            params.insert("spec_tokens".into(), sd.tokens.to_string());
            params.insert("spec_acceptance".into(), sd.acceptance.to_string());
            params.insert("spec_draft_cost".into(), sd.draft_cost.to_string());
        }
        FrontierConfig::new(
            id_of(self, c),
            params.into_iter().collect(),
            Some(c.gpu.name.clone()),
            c.gpus(),
            self.args.gpu[c.offer].usd_per_hour,
        )
    }

    /// A group's configurations, each with its curve. Every TP is run: a
    /// wider TP that makes one user slower can still carry more users a
    /// GPU (Qwen3-30B-A3B FP8 on H100s: TP 2 is slower than TP 1 for one
    /// user, and TP 4 at 512 users is on the frontier), so the climb that
    /// had stopped at the first TP not 5% faster for one user is gone.
    fn run_group(&self, group: &[Candidate]) -> Vec<FrontierConfig> {
        group
            .iter()
            .filter_map(|c| {
                let mut fc = self.config(c);
                let mut points = Vec::new();
                let run = self.curve(c, &mut points);
                match run {
                    Ok(()) => {}
                    // Stopped before its first point: not simulated, and
                    // left out (the note on the search counts it).
                    Err(e) if e.is::<Interrupted>() && points.is_empty() => {
                        self.cut_short.store(true, Ordering::SeqCst);
                        return None;
                    }
                    Err(e) if e.is::<Interrupted>() => {
                        self.cut_short.store(true, Ordering::SeqCst);
                        fc.extra.insert(CUT.into(), INTERRUPTED_CUT.into());
                    }
                    // A heavier load refused (the memory guard at 1,024
                    // users, say) cuts the curve there: the points done are
                    // kept (they had all been thrown away, "0 points").
                    Err(e) if !points.is_empty() => {
                        let next = if self.trace.is_some() { "a faster speed" } else { "a heavier load" };
                        let why =
                            format!("its curve is cut where {next} was refused ({e:#}); the points before it are kept");
                        fc.extra.insert(CUT.into(), why.into());
                    }
                    Err(e) => {
                        fc.status = ConfigStatus::Failed;
                        fc.error = Some(format!("{e:#}"));
                    }
                }
                fc.points = points;
                Some(fc)
            })
            .collect()
    }

    /// Whether Ctrl-C or SIGTERM has stopped the search.
    fn interrupted(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// The most sequences a replica runs at once: disaggregated, the
    /// decode pool holds the unit's sequences; an expert-parallel group,
    /// its ranks'.
    fn batch_limit(&self, c: &Candidate) -> u64 {
        let holders = match c.pd {
            Some(pd) => {
                let (dt, de) = pd.decode_sizes(c.tp, c.ep);
                pd.d * ep_ranks(dt, de)
            }
            None => c.ranks(),
        };
        u64::from(c.max_num_seqs) * u64::from(holders)
    }

    /// The poll of SGLang's power_of_two in front of `c`'s replicas
    /// ([`crate::launch::router_poll_s`]), where it has more than one and
    /// no pools: a trace's replay polls so, and a closed loop runs the
    /// configuration whole ([`Search::whole`]).
    fn polled(&self, c: &Candidate) -> Option<f64> {
        (c.pd.is_none() && c.engines() > 1)
            .then(|| crate::launch::router_poll_s(self.args.serve_engine, c.router))
            .flatten()
    }

    /// Whether a closed loop runs `c` whole (up to [`WHOLE_UNITS_MAX`] of
    /// its units, standing for the rest), its users sent through its
    /// router: behind power_of_two, whose draws part the replicas' loads
    /// where an even split keeps them equal, on loads polled (SGLang's) or
    /// on live counts among three or more (vLLM router's; of two it draws
    /// both, and is least-loaded). Least-loaded keeps a closed loop's
    /// replicas even, and one replica stands for each. With `--turns`,
    /// behind any router of two or more replicas: one replica standing for
    /// each would keep every session's turns on the replica whose cache
    /// holds its history, where round-robin and least-loaded send a later
    /// turn wherever they send it, and prefix-aware sends it to the
    /// least-loaded replica where the prompts it routed before (the
    /// session's earlier turns, never the answer that followed the last of
    /// them) cover 30 % of this one or less.
    /// Disaggregated units with sessions run whole too, their pools as
    /// one (as a trace runs them, and as their script starts them: one
    /// prefill pool and one decode pool behind one router), so that a
    /// later turn may go to another unit's prefill instance.
    fn whole(&self, c: &Candidate) -> bool {
        (self.sessions.is_some() && c.engines() > 1)
            || (c.pd.is_none() && runs_whole(c.router, c.engines(), self.polled(c).is_some()))
    }

    /// A session's turns at their mean (1 without `--turns`), for
    /// [`pd_balance`]; a dataset's own (`--turns all`) count as 1, its
    /// lengths unknown before it runs.
    fn mean_turns(&self) -> u32 {
        self.turns_per_session().round().min(f64::from(u32::MAX)) as u32
    }

    /// The requests a session sends at the mean: its turns (a drawn
    /// count's mean; a dataset's own, `--turns all`, 1, unknown before it
    /// runs), 1 without `--turns`.
    fn turns_per_session(&self) -> f64 {
        match self.sessions.as_ref().map(|s| &s.turns) {
            Some(goodput_load::workload::Turns::Drawn(d)) => d.mean().max(1.0),
            _ => 1.0,
        }
    }

    /// Whether users think between turns (`--think-time` above 0): a user
    /// then holds no sequence part of the time, so more users than the
    /// batch limit can be served without queueing, and each limit's curve
    /// is its own.
    fn thinks(&self) -> bool {
        self.sessions.as_ref().is_some_and(|s| !s.think.mean().is_zero())
    }

    /// The users per replica of a curve: the grid given, or 1, 2, 4, … up
    /// to the batch limit (and the limit itself). Users who think between
    /// turns ([`Search::thinks`]) go on doubling past it, up to
    /// [`THINKING_USERS_MAX`] times it: the curve ends where its
    /// throughput stops rising, once the users who are not thinking fill
    /// the batch.
    fn loads(&self, c: &Candidate) -> Vec<u64> {
        let cap = self.batch_limit(c);
        let most = if self.thinks() { cap.saturating_mul(THINKING_USERS_MAX) } else { cap };
        let mut v: Vec<u64> = match &self.args.concurrency {
            Some(l) => l.0.clone(),
            None if most > cap => std::iter::successors(Some(1u64), |&x| x.checked_mul(2))
                .take_while(|&x| x < cap)
                .chain([cap])
                .chain(std::iter::successors(cap.checked_mul(2), |&x| x.checked_mul(2)).take_while(|&x| x <= most))
                .collect(),
            None => std::iter::successors(Some(1u64), |&x| Some(x * 2)).take_while(|&x| x < cap).chain([cap]).collect(),
        };
        v.retain(|&x| x <= most);
        v.sort_unstable();
        v.dedup();
        v
    }

    /// One configuration's points, load rising, until it misses the SLO or
    /// its throughput stops rising, into `points`: those done are kept where
    /// a heavier load then fails.
    fn curve(&self, c: &Candidate, points: &mut Vec<FrontierPoint>) -> Result<()> {
        if let Some(t) = &self.trace {
            return self.trace_curve(c, t, points);
        }
        // Behind power_of_two the replicas' loads part (between SGLang's
        // polls; by the draws of vLLM router's): the configuration runs
        // whole (up to WHOLE_UNITS_MAX of its units, standing for the rest),
        // its users sent through the router (`ran` times a replica's); the
        // others' one replica stands for each, the users split evenly. With
        // sessions every configuration of several units runs whole, a
        // disaggregated one's pools as one ([`Search::whole`]).
        let whole = self.whole(c);
        let ran = if whole { c.engines().min(WHOLE_UNITS_MAX) } else { 1 };
        let units = u64::from(ran);
        let mut cfg = self.engine(c);
        if let (true, Some(pools)) = (whole, &mut cfg.pd) {
            *pools = pools.times(ran);
        } else if whole {
            (cfg.dp, cfg.router, cfg.router_poll_s) = (ran * c.ranks(), c.router, self.polled(c));
            // A dense model's replicas in one server (sessions run them
            // whole) are balanced as it balances them, as a trace's are.
            cfg.load_balance = self.replicas_controller(c).unwrap_or(cfg.load_balance);
            cfg.internal_lb = self.vllm_internal(c);
        }
        cfg.validate()?;
        let server = self.server(&cfg);
        let loads = self.loads(c);
        if let (true, Some(given)) = (loads.is_empty(), &self.args.concurrency) {
            let given: Vec<String> = given.0.iter().map(u64::to_string).collect();
            bail!(
                "every --concurrency given ({}) is above this configuration's batch limit: a replica runs at \
                 most {cap} sequences at once (--max-num-seqs {} on each rank that holds them), and users past \
                 that only wait in the queue; give loads of at most {cap}",
                given.join(","),
                c.max_num_seqs,
                cap = self.batch_limit(c),
            );
        }
        for (k, users) in loads.into_iter().enumerate() {
            if self.interrupted() {
                return Err(Interrupted.into());
            }
            // Whose load an error names: a replica's, and where several ran
            // together, how many (their requests were the replica's times as
            // many).
            let mut per_replica = format!("{} per replica", plural(users as usize, "user"));
            if ran > 1 {
                per_replica.push_str(&format!(" ({ran} replicas run together behind the router)"));
            }
            let mut plan = self.point_plan(users, units, k as u64)?;
            let workload = self.workload.with_seed(plan.seed);
            if self.args.shape.ramp_up.is_none() && users.saturating_mul(units) > 1 {
                // Users in sessions join over a session's cycle (its turns
                // and the think times between them), so that their phases
                // spread over it: over one request's time a fixed pause kept
                // them in waves that never broke (Llama-3.1-8B on an H100,
                // 600 s of thought: a median TTFT of 718 ms at 1,024 users,
                // 2,500 at 2,048 and 1,780 at 4,096; 24 to 27 ms now), and
                // over one turn's, in phase (four turns of 2,000-token
                // questions behind prefix-aware on two H100s, forty requests
                // a user: 1,220 output tokens/s a GPU where spread read
                // 1,325).
                let think = self.sessions.as_ref().map_or(std::time::Duration::ZERO, |s| s.think.mean());
                let turns = self.turns_per_session();
                let request = self
                    .one_request_time(server, &plan, &workload)
                    .with_context(|| format!("{per_replica}, their pilot"))?;
                plan.ramp_up = request.mul_f64(turns).saturating_add(think.mul_f64(turns - 1.0));
                // Each user's first session starts within that ramp, which
                // is warm-up: a warm-up session a user more on top of it
                // had made the point half again as long.
                if self.sessions.is_some() && matches!(self.args.shape.warmup, WarmupArg::Requests(0)) {
                    plan.warmup = 0;
                }
                plan.warmup_time = plan.warmup_time.max(plan.ramp_up);
            }
            let config = self.workload_config.clone();
            let run = estimate_result_streamed(server, &plan, &workload, config, &self.opts, false, None);
            let (result, run) = match (run, self.args.shape.ramp_up) {
                (Ok(r), _) => r,
                // What is due during the ramp-up is warm-up, each user sending
                // throughout: a ramp-up far longer than a request sends far
                // more than asked, and the memory guard refuses it (it had
                // read as the requests' fault: "give fewer requests").
                (Err(e), Some(ramp)) if format!("{e:#}").contains("in memory") => bail!(
                    "{per_replica}: a --ramp-up of {} is too long: what is due during it is warm-up, each \
                     user sending throughout, and the point would send far more requests than the {} measured \
                     ({e:#}); give a shorter --ramp-up (a few requests' time), or leave it out: plan then joins \
                     users over one request's time",
                    goodput_core::util::duration_text(ramp),
                    plan.requests.unwrap_or_default()
                ),
                (Err(e), _) => return Err(e.context(per_replica)),
            };
            let steady = steady_output_rate(&run, plan.ramp_up, users.saturating_mul(units));
            let mut point = self.point(c, users, &result, steady.ok(), ran);
            // Too few completions with every user in: no rate to give.
            point.steady = steady.is_err_and(|unmeasured| unmeasured).then_some(false);
            let ttft_alone = missed_ttft_alone(&result, self.opts.slo.as_ref(), self.attainment);
            if climbed_to_the_end(points, point, ttft_alone) {
                break;
            }
        }
        Ok(())
    }

    /// With `--trace`: the whole configuration (its `dp` replicas behind
    /// its router) replaying the trace at each speed, rising, until it
    /// misses the SLO or its throughput stops rising.
    fn trace_curve(&self, c: &Candidate, t: &PlanTrace, points: &mut Vec<FrontierPoint>) -> Result<()> {
        let mut cfg = self.engine(c);
        match (&mut cfg.pd, c.pd) {
            // The units' pools together: P × units prefill instances and
            // D × units decode ones, each pool routing to its least loaded
            // (the units, not `dp`, which counts an expert-parallel
            // instance's every rank).
            (Some(pools), Some(_)) => *pools = pools.times(c.engines()),
            _ => {
                cfg.dp = c.dp;
                cfg.router = c.router;
                cfg.router_poll_s = self.polled(c);
                cfg.load_balance = self.replicas_controller(c).unwrap_or(cfg.load_balance);
                cfg.internal_lb = self.vllm_internal(c);
            }
        }
        cfg.validate()?;
        let server = self.server(&cfg);
        // The default speeds go on doubling while the curve is within the
        // SLO and rising (it had stopped at 16× unsaturated, and the best
        // was then whichever configuration the last speed favoured); speeds
        // given are run as given, and `plan` warns of a curve they leave
        // rising.
        let mut speeds = t.speeds.clone();
        let mut k = 0;
        while let Some(&speed) = speeds.get(k) {
            if self.interrupted() {
                return Err(Interrupted.into());
            }
            if k + 1 == speeds.len() && self.args.trace_speed.is_none() && speed * 2.0 <= MAX_TRACE_SPEED {
                speeds.push(speed * 2.0);
            }
            let entries: Vec<TraceEntry> =
                t.entries.iter().map(|e| TraceEntry { at: e.at.div_f64(speed), ..e.clone() }).collect();
            let seed = crate::cli::Seed { value: self.args.shape.seed.of_run(k as u64), drawn: false };
            let shape = crate::cli::ShapeArgs { seed, ..self.args.shape.clone() };
            let mut plan = setup::shaped_plan(&shape, None, None, Some(&entries), std::time::Duration::from_secs(5))?;
            plan.trace_source = Some(goodput_load::runner::TraceSource { file: t.file.clone(), speed });
            let workload = self.workload.with_seed(plan.seed);
            let (result, records) =
                estimate_result(server, &plan, &workload, self.workload_config.clone(), &self.opts, false)
                    .with_context(|| format!("the trace at speed {speed}"))?;
            // The offered rate: the requests replayed over their span, at
            // this speed (with -n, the trace's first ones: the whole trace's
            // rate had labelled a prefix that came at another pace).
            let replayed = setup::trace_replayed(t.entries.len(), plan.requests, plan.warmup);
            let offered =
                setup::trace_rate(&t.entries, plan.requests, plan.warmup).map_or(f64::INFINITY, |r| r * speed);
            let ttft_alone = missed_ttft_alone(&result, self.opts.slo.as_ref(), self.attainment);
            // A steady point served the trace as it came: its output tokens/s
            // are the answers it gave over the span the trace offered them
            // in (as its load is the requests over that span), not over the
            // run's window, whose drain after the last arrival had diluted a
            // fast replay's (7,531 tokens/s of 9,172 offered, every request
            // served). The requests replayed are the load's: warm-up too.
            let served: u64 = records.iter().filter(|r| r.outcome.is_success()).map(|r| r.output_tokens).sum();
            let offered_over = replayed as f64 / offered;
            let served = (offered_over > 0.0).then(|| served as f64 / offered_over);
            if climbed_to_the_end(points, self.whole_point(c, offered, &result, served), ttft_alone) {
                break;
            }
            k += 1;
        }
        Ok(())
    }

    /// A point of `c` from the whole configuration's result (`--trace`),
    /// at `rate` requests/s offered. `served`: the output tokens/s of the
    /// requests it served over the span they were offered in, its rate
    /// when it is steady (it then kept up with them); a point not steady
    /// gives the run's window's, as a closed loop's does.
    fn whole_point(&self, c: &Candidate, rate: f64, r: &goodput_core::RunResult, served: Option<f64>) -> FrontierPoint {
        // An open load is judged as estimate judges it (its arrivals against
        // its completions, its backlog and TTFT over the run, its ramp and
        // drain): a trace replayed faster than the configuration serves it
        // had been measured as one burst and marked met, the best point at
        // five times the load it served.
        let unsteady = match &r.summary.stability {
            Some(s) if !s.steady => Some(s.reason.clone().unwrap_or_else(|| "not a steady state".into())),
            Some(_) => None,
            None => Some("no request completed".into()),
        };
        let steady = served.filter(|_| unsteady.is_none());
        let mut p = self.point(c, 0, r, steady, c.engines());
        p.load = Load::Rate(rate);
        let Some(unsteady) = unsteady else { return p };
        p.steady = Some(false);
        p.extra.insert(UNSTEADY.into(), unsteady.into());
        p
    }

    /// What a million output tokens cost on `gpus` of `c`'s offer at `total`
    /// output tokens/s; `None` without a price or without output.
    fn usd_per_million(&self, c: &Candidate, gpus: f64, total: f64) -> Option<f64> {
        self.args.gpu[c.offer]
            .usd_per_hour
            .map(|u| u * gpus)
            .filter(|_| total > 0.0)
            .map(|u| u / (total * 3600.0) * 1e6)
    }

    /// How long one request takes at `plan`'s load: the mean end-to-end
    /// time of a pilot of one request per user, sent together. A point's
    /// users join over it (its `ramp_up`), so that they send at times of
    /// their own, as users of a deployment do, rather than in the waves
    /// that users started together keep (docs/plan.md); the validation's
    /// closed loops start so too (its pilot sends two a user: the same
    /// points here within 10 %, at half the pilot's cost).
    fn one_request_time(
        &self,
        server: VirtualServer,
        plan: &LoadPlan,
        workload: &Workload,
    ) -> Result<std::time::Duration> {
        let users = plan.concurrency.unwrap_or(1) as u64;
        let pilot = LoadPlan {
            requests: Some(users),
            duration: None,
            warmup: 0,
            warmup_time: std::time::Duration::ZERO,
            ramp_up: std::time::Duration::ZERO,
            ..plan.clone()
        };
        // Sessions: each user's first question alone, where the workload
        // gives it lengths as a lone request (a session's every turn had
        // made the pilot a third of a point's time).
        let run = |p: &LoadPlan| estimate_result(server, p, workload, self.workload_config.clone(), &self.opts, false);
        let first_turns = LoadPlan { sessions: None, ..pilot.clone() };
        let (result, _) = match pilot.sessions.is_some().then(|| run(&first_turns)) {
            Some(Ok(r)) => r,
            _ => run(&pilot)?,
        };
        let mean_ms = result.summary.e2e_ms.mean.unwrap_or(0.0);
        Ok(std::time::Duration::from_secs_f64(mean_ms.max(0.0) / 1e3))
    }

    /// The load of a point of `users` per replica, sent to `units`
    /// replicas together (1: one replica stands for each): `-n` and
    /// `--warmup` are a replica's, times `units`.
    fn point_plan(&self, users: u64, units: u64, k: u64) -> Result<LoadPlan> {
        let a = self.args;
        let turns = self.turns_per_session();
        let requests = point_requests(a.shape.requests, users, a.requests_per_user, turns).saturating_mul(units);
        let warmup = match a.shape.warmup {
            WarmupArg::Requests(0) => WarmupArg::Requests(users.saturating_mul(units)),
            WarmupArg::Requests(n) => WarmupArg::Requests(n.saturating_mul(units)),
            w => w,
        };
        let users = users.saturating_mul(units);
        let seed = crate::cli::Seed { value: a.shape.seed.of_run(k), drawn: false };
        let shape = crate::cli::ShapeArgs { requests: Some(requests), warmup, seed, ..a.shape.clone() };
        setup::shaped_plan(&shape, Some(users as usize), None, None, std::time::Duration::from_secs(5))
    }

    /// A point of `c` at `users` per replica, from one replica's result:
    /// throughput per GPU and speed per user are the replica's; the
    /// configuration's totals are its units' count (`dp` replicas or
    /// disaggregated units, or `dp` over an expert-parallel group's ranks)
    /// times its.
    /// `steady`: the replica's output tokens/s counted while every user was
    /// in the loop ([`steady_output_rate`]), which takes the place of the
    /// run's window's; its goodput keeps its share of the output, and its
    /// tokens/s per provisioned megawatt follow it (its joules per token are
    /// the window's).
    /// `ran`: the units the result is of (1: one replica; the whole
    /// configuration's, or up to [`WHOLE_UNITS_MAX`] of them behind
    /// power_of_two, [`Search::whole`]).
    fn point(
        &self,
        c: &Candidate,
        users: u64,
        r: &goodput_core::RunResult,
        steady: Option<f64>,
        ran: u32,
    ) -> FrontierPoint {
        let s = &r.summary;
        let dp = f64::from(c.engines()) / f64::from(ran.max(1));
        let times = |n: u64| (n as f64 * dp).round() as u64;
        let window = s.throughput.output_tokens_per_s;
        let replica = steady.unwrap_or(window);
        let scale = if window > 0.0 { replica / window } else { 1.0 };
        let total = replica * dp;
        let gpus = f64::from(c.gpus());
        let tpot = s.tpot_ms.p(self.percentile);
        // What the prefix caches served, where a router decides it: a
        // session's history, a trace's shared blocks.
        let mut extra = Extra::new();
        if self.sessions.is_some() || self.trace.is_some() {
            if let Some(rate) = r.engine.as_ref().and_then(|e| e.prefix_cache_hit_rate) {
                extra.insert(goodput_core::doc::frontier::PREFIX_CACHE_HIT_RATE.into(), rate.into());
            }
        }
        FrontierPoint {
            load: Load::Concurrency(users * u64::from(c.engines())),
            output_tokens_per_s: total,
            output_tokens_per_s_per_gpu: total / gpus,
            tokens_per_s_per_user: tpot.filter(|&t| t > 0.0).map(|t| 1000.0 / t),
            ttft_ms: s.ttft_ms.p(self.percentile),
            tpot_ms: tpot,
            goodput_tokens_per_s: s.goodput.as_ref().map(|g| g.output_tokens_per_s * scale * dp),
            meets_slo: meets_slo(r, self.attainment),
            usd_per_million_output_tokens: self.usd_per_million(c, gpus, total),
            // Both per token or per provisioned watt: a replica's are the
            // configuration's. J/token is the window's energy over its
            // tokens: the steady rate at the window's mean power, tried,
            // read 7-10% low against long runs (the ramp and drain draw
            // less), where the window's reads 3-12% high.
            joules_per_output_token: r.energy.as_ref().and_then(|e| e.joules_per_output_token),
            output_tokens_per_s_per_mw: r
                .energy
                .as_ref()
                .and_then(|e| e.output_tokens_per_s_per_provisioned_mw)
                .map(|m| m * scale),
            completed: times(s.requests.completed),
            failed: times(s.requests.failed),
            steady: None,
            client_stalled: None,
            spec_decode: goodput_core::doc::frontier::PointSpecDecode::of(r),
            extra,
        }
    }
}

/// A point's measured requests: `--requests-per-user` per user (at least
/// [`MIN_REQUESTS`] in all), or `-n`'s total, but never fewer than
/// [`MIN_REQUESTS_PER_USER`] per user. With sessions of `turns` requests
/// at the mean (1: single requests), the count is of sessions, each
/// request count ([`per_user`]) in as many sessions as hold it; `-n`
/// counts sessions as given.
fn point_requests(n: Option<u64>, users: u64, requests_per_user: u64, turns: f64) -> u64 {
    let floor = users.saturating_mul(per_user(MIN_REQUESTS_PER_USER, turns));
    match n {
        Some(n) => n.max(floor),
        None => users.saturating_mul(per_user(requests_per_user, turns)).max(per_user(MIN_REQUESTS, turns)),
    }
}

/// The sessions of `turns` requests at the mean (1: single requests) that
/// send `requests` requests, rounded up: at least one.
fn per_user(requests: u64, turns: f64) -> u64 {
    ((requests as f64 / turns.max(1.0)).ceil() as u64).max(1)
}

/// A closed loop's output tokens/s while every user is in it: the tokens
/// streamed after `joined` (the end of the users' ramp-up; the first send
/// without one) and up to the last send, over that time. Before it users
/// are still joining; after it they leave one by one as their last answers
/// end. The run's own window (first measured send to last end) takes in
/// both edges, and where users send at times of their own those edges run
/// at part load, a large share of a point's few requests per user.
/// `Err(true)` when that time holds fewer than
/// [`MIN_STEADY_COMPLETIONS_PER_USER`] completions per user of `users`: a
/// window that short measures a step's burst, not a rate (one request at
/// 512 users had given 20 times the GPU's peak); `Err(false)` when nothing
/// streamed in it.
fn steady_output_rate(run: &goodput_sim::engine::SimRun, joined: std::time::Duration, users: u64) -> Result<f64, bool> {
    let records = &run.records;
    let first = records.iter().map(|r| r.sent).min().ok_or(false)?;
    let from = joined.max(first);
    // Sessions: the last session's first turn. Past it no user takes a new
    // session, and each leaves as its last one ends: a session's later
    // turns go on long after (Llama-3.1-8B on eight H100s, 2,048 users in
    // five turns of 300 tokens with 5 s of thought, had read 4,996 output
    // tokens/s a GPU with one measured session a user, 6,395 with four,
    // where twenty read 7,632; now, users joining over a session's cycle,
    // 7,658, 7,625 and 7,627).
    let sessions_start = records.iter().filter(|r| r.session.is_some_and(|s| s.turn == 1)).map(|r| r.sent).max();
    let to = sessions_start.or_else(|| records.iter().map(|r| r.sent).max()).ok_or(false)?;
    if to <= from {
        return Err(users > 1);
    }
    let completed = records.iter().filter(|r| r.outcome.is_success() && r.end > from && r.end <= to).count() as u64;
    if completed < users.saturating_mul(MIN_STEADY_COMPLETIONS_PER_USER) {
        return Err(true);
    }
    let within = |t: std::time::Duration| t > from && t <= to;
    // Records that keep their first and last chunks only give the tokens'
    // times apart (`streamed`); the sums are the same.
    let tokens: u64 = if run.streamed.is_empty() {
        records.iter().flat_map(|r| r.chunks.iter()).filter(|ch| within(ch.t)).map(|ch| u64::from(ch.tokens)).sum()
    } else {
        run.streamed.iter().filter(|s| within(s.0)).map(|s| s.1).sum()
    };
    if tokens == 0 {
        return Err(false);
    }
    Ok(tokens as f64 / (to - from).as_secs_f64())
}

/// Configurations that ran whose curves are another's, point for point
/// (the same GPUs at the same price, every figure equal): a chunked-prefill
/// budget that never bound, as 2,048 and 8,192 tokens a step gave
/// Qwen3-30B-A3B's prompts of 1,024 tokens, had put two rows of the same
/// figures on the frontier. Each keeps its first one's points; the later
/// ones name it in `points_of` and give theirs up. Returns each tie (the
/// later, the first, the settings in which they differ), for its line.
fn tie_equal_curves(doc: &mut FrontierResult) -> Vec<(usize, usize, String)> {
    let mut ties = Vec::new();
    for i in 0..doc.configs.len() {
        let c = &doc.configs[i];
        if c.status != ConfigStatus::Ok || c.points.is_empty() || c.points_of.is_some() {
            continue;
        }
        let first = (0..i).find(|&j| {
            let o = &doc.configs[j];
            o.status == ConfigStatus::Ok
                && o.points_of.is_none()
                && o.gpus == c.gpus
                && o.gpu == c.gpu
                && o.gpu_hour_usd == c.gpu_hour_usd
                && o.points == c.points
                && o.extra == c.extra
        });
        let Some(j) = first else { continue };
        let o = &doc.configs[j];
        let differ: Vec<String> = c
            .params
            .iter()
            .filter(|(k, v)| o.params.get(*k) != Some(*v))
            .map(|(k, v)| match o.params.get(k) {
                Some(w) => format!("{k} {v} (against {w})"),
                None => format!("{k} {v}"),
            })
            .collect();
        let why = if differ.is_empty() { "its settings".to_string() } else { differ.join(", ") };
        let id = o.id.clone();
        let c = &mut doc.configs[i];
        c.points_of = Some(id);
        c.points.clear();
        ties.push((i, j, why));
    }
    ties
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records of their ends serve every SLO but one that judges an ITL,
    /// as a limit or as an objective.
    #[test]
    fn only_an_itl_term_needs_every_chunk() {
        let judges = |s: &str| judges_chunks(Some(&s.parse::<Slo>().unwrap()));
        assert!(!judges_chunks(None));
        assert!(!judges("ttft<=2s,tpot<=50ms,e2e<=10s") && !judges("ttft:p95<=2s,tpot:p99<=40ms"));
        assert!(judges("itl_max<=500ms") && judges("ttft<=2s,itl_max:p95<=500ms"));
    }

    /// A point at `users` of `tok_s` output tokens a second that met the
    /// SLO or not.
    fn point(users: u64, tok_s: f64, meets: bool) -> FrontierPoint {
        serde_json::from_value(serde_json::json!({
            "load": {"kind": "concurrency", "value": users}, "output_tokens_per_s": tok_s, "output_tokens_per_s_per_gpu": tok_s,
            "tokens_per_s_per_user": 10.0, "ttft_ms": 100.0, "tpot_ms": 100.0, "meets_slo": meets,
        }))
        .unwrap()
    }

    /// A miss of TTFT alone goes on to the next load, at a curve's first
    /// point too (it had ended a curve there, against the docs); a second
    /// miss in a row, or a miss of anything else, ends it.
    #[test]
    fn a_ttft_miss_alone_goes_on_and_a_second_in_a_row_ends_the_curve() {
        assert!(!at_the_end(&[point(1, 100.0, false)], true));
        assert!(at_the_end(&[point(1, 100.0, false)], false));
        assert!(!at_the_end(&[point(1, 100.0, true), point(2, 200.0, false)], true));
        assert!(at_the_end(&[point(1, 100.0, false), point(2, 200.0, false)], true));
        // Throughput that stopped rising ends it, met or not.
        assert!(at_the_end(&[point(1, 100.0, true), point(2, 101.0, true)], false));
    }

    /// SGLang's DP attention chunks a group's prompt by one rank's share of
    /// the group's budget and splits its cap: its balance is that of vLLM's
    /// ranks with a quarter of each, not of the group's whole budget; and
    /// vLLM's ranks each bring their own cap (the group's decode batch had
    /// been one rank's).
    #[test]
    fn pools_of_prompts_that_share_nothing_are_simulated_least_loaded_exactly() {
        use goodput_load::workload::{LengthDist, SharedPrefix};
        let synthetic = |shared_prefix| Workload::Synthetic {
            input: LengthDist::Fixed(256),
            output: LengthDist::Fixed(64),
            seed: 1,
            tokenizer: None,
            shared_prefix,
        };
        let shared = Some(SharedPrefix { tokens: 2048, ratio: 1.0, count: 64 });
        assert_eq!(simulated_router(RouterPolicy::PrefixAware, &synthetic(None), false), RouterPolicy::LeastLoaded);
        assert_eq!(simulated_router(RouterPolicy::PrefixAware, &synthetic(shared), false), RouterPolicy::PrefixAware);
        assert_eq!(simulated_router(RouterPolicy::RoundRobin, &synthetic(None), false), RouterPolicy::RoundRobin);
        // A session's later turns open with its earlier ones: the record finds them.
        assert_eq!(simulated_router(RouterPolicy::PrefixAware, &synthetic(None), true), RouterPolicy::PrefixAware);
        // And least-loaded is what prefix-aware does there: the same run.
        let model = goodput_sim::engine::ModelSpec::lookup("llama-3.1-8b").unwrap();
        let run = |router| {
            let mut c = EngineConfig::new(model.clone(), GpuSpec::lookup("h100").unwrap(), Precision::Fp8);
            (c.pd, c.router) = (Some(goodput_sim::engine::Disaggregation::parse("2:3").unwrap()), router);
            let requests = (0..400).map(|_| goodput_sim::engine::VirtualRequest::new(1024, 64)).collect();
            let load = goodput_sim::engine::VirtualLoad::closed_loop(requests, 48);
            goodput_sim::engine::simulate(&c, &load).unwrap().engine.replicas
        };
        let (ll, pa) = (run(RouterPolicy::LeastLoaded), run(RouterPolicy::PrefixAware));
        assert_eq!(format!("{ll:?}"), format!("{pa:?}"));
        assert!(ll.iter().all(|r| r.requests > 0), "{ll:?}");
    }

    #[test]
    fn a_groups_balance_takes_each_ranks_share_of_budget_and_cap() {
        use goodput_sim::engine::SchedulerPolicy;
        let model = goodput_sim::engine::ModelSpec::lookup("qwen3-30b-a3b").unwrap();
        let balance = |mbt: u32, seqs: u32, scheduler: SchedulerPolicy| {
            let mut c = EngineConfig::new(model.clone(), GpuSpec::lookup("h100").unwrap(), Precision::Bf16);
            (c.tp, c.ep, c.dp, c.max_num_batched_tokens, c.scheduler) = (1, 4, 4, mbt, scheduler);
            c.max_num_seqs = Some(seqs);
            pd_balance(&c, 8192.0, 256.0, 1).unwrap()
        };
        let sglang = balance(8192, 64, SchedulerPolicy::Sglang);
        let (quarter, whole) = (balance(2048, 16, SchedulerPolicy::Vllm), balance(8192, 16, SchedulerPolicy::Vllm));
        assert!((sglang / quarter - 1.0).abs() < 1e-9, "{sglang} against {quarter}");
        assert!(sglang > whole * 1.05, "smaller chunks, more prefill: {sglang} against {whole}");
        // Four ranks of 16 seats decode 64 at once: far more prefill needed
        // than for 16 in all.
        let mut one = EngineConfig::new(model.clone(), GpuSpec::lookup("h100").unwrap(), Precision::Bf16);
        (one.max_num_batched_tokens, one.max_num_seqs) = (2048, Some(16));
        assert!(quarter > 2.0 * pd_balance(&one, 8192.0, 256.0, 1).unwrap());
    }

    /// A session's balance: each later turn prefills the answer before it
    /// with its question (more prefill than its question alone), and
    /// decodes at the conversation's length, with fewer conversations in
    /// the cache than single requests: short questions after long answers
    /// want more prefill than the single request of their lengths, long
    /// questions after short answers less.
    #[test]
    fn a_sessions_balance_counts_each_turns_answer_and_history() {
        let model = goodput_sim::engine::ModelSpec::lookup("llama-3.1-8b").unwrap();
        let mut c = EngineConfig::new(model, GpuSpec::lookup("h100").unwrap(), Precision::Fp8);
        let b = |c: &EngineConfig, input: f64, output: f64, turns: u32| pd_balance(c, input, output, turns).unwrap();
        // 16 sequences, which the cache holds at every turn: the prefill
        // of each later turn's answer weighs (about 2.2 times the balance
        // of short questions after long answers), and the longer history
        // of long questions the decode's (13 % less).
        c.max_num_seqs = Some(16);
        let (one, four) = (b(&c, 64.0, 1024.0, 1), b(&c, 64.0, 1024.0, 4));
        assert!(four > 2.0 * one, "64/1024: {four} over four turns against {one}");
        let (one, four) = (b(&c, 4096.0, 64.0, 1), b(&c, 4096.0, 64.0, 4));
        assert!(four < 0.95 * one, "4096/64: {four} over four turns against {one}");
        // 256, where the cache holds fewer whole conversations than single
        // requests: the decode's smaller batch halves it (3.50 to 1.81).
        c.max_num_seqs = Some(256);
        let (one, four) = (b(&c, 4096.0, 64.0, 1), b(&c, 4096.0, 64.0, 4));
        assert!(four < 0.6 * one, "4096/64 at 256: {four} over four turns against {one}");
        // One turn is the single request's balance.
        assert_eq!(b(&c, 4096.0, 64.0, 1), pd_balance(&c, 4096.0, 64.0, 0).unwrap());
    }

    /// `--requests-per-user` with sessions: as many sessions as hold the
    /// requests at the mean turns, at least one; `-n` counts sessions,
    /// raised to the floor's.
    #[test]
    fn a_sessions_point_sends_the_requests_asked_in_whole_sessions() {
        assert_eq!(point_requests(None, 10, 4, 1.0), 40);
        assert_eq!(point_requests(None, 10, 4, 5.0), 10);
        assert_eq!(point_requests(None, 10, 12, 5.0), 30);
        assert_eq!(point_requests(None, 1, 4, 5.0), 4, "at least MIN_REQUESTS' sessions");
        assert_eq!(point_requests(Some(3), 10, 4, 5.0), 10, "-n raised to a session a user");
        assert_eq!(point_requests(Some(300), 10, 4, 5.0), 300);
    }

    /// A unit of `pd` at prefill TP `tp`, EP `ep` and `pp` stages, replicated
    /// over `budget` GPUs as the search does.
    fn disaggregated(pd: Pools, tp: u32, ep: u32, pp: u32, budget: u32) -> Candidate {
        let pd = pd.at(tp, ep).expect("the ratio's own prefill sizes");
        Candidate {
            offer: 0,
            gpu: GpuSpec::lookup("h100").unwrap(),
            precision: Precision::Bf16,
            tp,
            dp: budget / pd.gpus(tp, ep, pp) * ep_ranks(tp, ep),
            pp,
            ep,
            max_num_seqs: 256,
            max_num_batched_tokens: 2048,
            pd: Some(pd),
            router: RouterPolicy::LeastLoaded,
            spec: 0,
            balance: LoadBalance::Auto,
            mixed: false,
            activations: None,
            kv: KvCacheDtype::Auto,
        }
    }

    /// A disaggregated configuration's name gives each pool's GPUs over all
    /// its units (`4P+8D`), then the instances' sizes: a pool of TP 2
    /// instances had been named by its instances (`tp2x2 … pd1:2`), which
    /// read as GPUs. The two pools' GPUs are the configuration's.
    #[test]
    fn a_disaggregated_name_counts_each_pools_gpus() {
        let sized = |spec: &str| {
            let d = Disaggregation::parse(spec).unwrap();
            Pools {
                p: d.prefill,
                d: d.decode,
                prefill_tp: d.prefill_tp,
                decode_tp: d.decode_tp,
                prefill_ep: d.prefill_ep,
                decode_ep: d.decode_ep,
            }
        };
        let cases = [
            // Two units of a TP 2 prefill instance and two TP 2 decode ones.
            (disaggregated(Pools::ratio(1, 2), 2, 1, 1, 12), " 4P+8D tp2", 12),
            // Three prefill instances of one GPU beside a decode one of four.
            (disaggregated(sized("3:1xTP4"), 1, 1, 1, 8), " 3P+4D tp1+tp4", 7),
            // Two stages an instance: counted in both pools' GPUs.
            (disaggregated(Pools::ratio(1, 1), 1, 1, 2, 8), " 4P+4D tp1 pp2", 8),
            // Expert-parallel groups of eight and sixteen ranks, two units.
            (disaggregated(sized("1xEP8:1xEP16"), 1, 8, 1, 48), " 16P+32D tp1 ep8+ep16", 48),
            // One EP for both pools.
            (disaggregated(Pools::ratio(1, 1), 2, 4, 1, 8), " 4P+4D tp2 ep4", 8),
        ];
        for (c, name, gpus) in cases {
            assert_eq!(pools_id(&c, c.pd.unwrap()), name, "{c:?}");
            assert_eq!(c.gpus(), gpus, "{name}");
        }
    }
}
