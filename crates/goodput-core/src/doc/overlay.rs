//! A predicted frontier (`goodput plan`) beside a measured one (`goodput
//! sweep --serve-grid`): configurations paired by their settings mapped onto
//! the simulator's knobs, points paired by load per replica (the predicted
//! curve interpolated at the measured load), and per figure the signed
//! error of the prediction with its median absolute error per configuration
//! and overall. Configurations on one side only are listed with the reason.
//! `goodput compare plan.json frontier.json` writes it (`kind`
//! `frontier_compare`); goodput-report's `overlay` renders it.

use crate::doc::frontier::{
    ConfigStatus, FrontierConfig, FrontierPoint, FrontierResult, FrontierSource, PointSpecDecode,
};
use crate::doc::sweep::Load;
#[cfg(feature = "schema")]
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The simulator's knobs a configuration's settings map onto, as `goodput
/// plan` names them in its documents' `params`.
pub const KNOBS: [&str; 22] = [
    "gpu",
    "tp",
    "dp",
    "precision",
    "kv_cache_dtype",
    "max_num_seqs",
    "max_num_batched_tokens",
    "ep",
    "pp",
    "pd",
    "scheduler",
    "spec_tokens",
    "router",
    "mixed_batches",
    "schedule_conservativeness",
    "internal_lb",
    "async_scheduling",
    "scheduler_recv_interval",
    "max_prefill_tokens",
    "batch_wait_timeout_iters",
    "batch_wait_max_tokens_ratio",
    "mxfp4_activations",
];

/// Each knob's other names: the servers' flags for it (vLLM's
/// `tensor_parallel_size`, `quantization`; SGLang's `tp_size`,
/// `max_running_requests`, `chunked_prefill_size`; llama.cpp's `np`
/// (parallel slots) and `b` (batch size in tokens); the routers'
/// `policy` and SGLang's `load_balance_method`) and short forms.
pub const KNOB_ALIASES: [(&str, &[&str]); 22] = [
    ("gpu", &["gpu_type"]),
    ("tp", &["tensor_parallel_size", "tp_size"]),
    ("dp", &["data_parallel_size", "dp_size"]),
    ("precision", &["quantization", "dtype"]),
    ("kv_cache_dtype", &[]),
    ("max_num_seqs", &["seqs", "max_seqs", "max_running_requests", "np", "parallel"]),
    ("max_num_batched_tokens", &["mbt", "batched_tokens", "chunked_prefill_size", "b", "batch_size"]),
    ("ep", &["ep_size", "expert_parallel_size"]),
    ("pp", &["pipeline_parallel_size", "pp_size"]),
    ("pd", &["pd_ratio", "disaggregation"]),
    ("scheduler", &["scheduler_policy"]),
    ("spec_tokens", &["num_speculative_tokens", "spec"]),
    ("router", &["policy", "load_balance_method", "router_policy"]),
    // Prompts and decodes in one step: SGLang's --enable-mixed-chunk.
    ("mixed_batches", &["enable_mixed_chunk"]),
    // SGLang's own name; its scheduler's alone.
    ("schedule_conservativeness", &[]),
    // vLLM's own balancing of its --data-parallel-size replicas (the
    // default of one vLLM server; `plan` names it where it predicted it).
    ("internal_lb", &[]),
    // A scheduler a step ahead: vLLM's --async-scheduling, on by default
    // (SGLang's and TensorRT-LLM's switches are its negation,
    // `disable_overlap_*`).
    ("async_scheduling", &[]),
    // SGLang's new requests taken every that many decode steps.
    ("scheduler_recv_interval", &["recv_interval"]),
    // SGLang's prompt tokens a step past its first prompt's.
    ("max_prefill_tokens", &[]),
    // TensorRT-LLM's batch waiting (its own names).
    ("batch_wait_timeout_iters", &[]),
    ("batch_wait_max_tokens_ratio", &[]),
    // What an MXFP4 mixture of experts' experts multiply against (W4A8 or
    // W4A16; absent, the GPU's own, so no single value stands for it).
    ("mxfp4_activations", &["moe_activations"]),
];

/// The value a knob has where a configuration's settings leave it out: `goodput
/// plan` names `pp`, `ep` and `spec_tokens` only where they are on (and
/// `mixed_batches` only where off, SGLang's), so a grid's `pp=1` or
/// `spec_tokens=0` is a plan's configuration without them.
fn absent_value(params: &crate::doc::frontier::ParamMap, knob: &str) -> Option<&'static str> {
    match knob {
        // vLLM 0.14 left its step ahead off with pipeline stages, where
        // `plan` names it only where on.
        "async_scheduling" if vllm_stages(params) => Some("false"),
        "pp" | "ep" => Some("1"),
        "spec_tokens" => Some("0"),
        "mixed_batches" => Some("true"),
        "schedule_conservativeness" | "scheduler_recv_interval" => Some("1"),
        // SGLang's default.
        "max_prefill_tokens" => Some("16384"),
        "batch_wait_timeout_iters" | "batch_wait_max_tokens_ratio" => Some("0"),
        "internal_lb" => Some("false"),
        // The servers' default (vLLM's since 0.14, SGLang's, TensorRT-LLM's
        // PyTorch backend's): `plan` names it only where off.
        "async_scheduling" => Some("true"),
        // The server's default: the activations' width.
        "kv_cache_dtype" => Some("auto"),
        RANK_BALANCE => Some("auto"),
        _ => None,
    }
}

/// Whether a configuration's settings run vLLM's scheduler (the default
/// where they name none) over pipeline stages.
fn vllm_stages(params: &crate::doc::frontier::ParamMap) -> bool {
    let vllm = knob_value(params, "scheduler").is_none_or(|s| s == "vllm");
    vllm && knob_value(params, "pp").and_then(|v| v.parse::<u32>().ok()).is_some_and(|pp| pp > 1)
}

/// The simulator's knob a server setting (a grid parameter) names, when it
/// names one: the knob's own name or one of [`KNOB_ALIASES`]. Case, leading
/// dashes and `-` for `_` do not matter.
pub fn knob_of(param: &str) -> Option<&'static str> {
    let p = param_key(param);
    KNOB_ALIASES.iter().find(|(knob, names)| *knob == p || names.contains(&p.as_str())).map(|(knob, _)| *knob)
}

/// A server setting's name as the knobs' names are spelt: case, leading
/// dashes and `-` for `_` do not matter (`--Load-Balance-Method` is
/// `load_balance_method`).
pub fn param_key(param: &str) -> String {
    param.trim().trim_start_matches('-').to_ascii_lowercase().replace('-', "_")
}

/// The knobs and their other names, as an error lists them:
/// `tp (tensor_parallel_size, tp_size), …, kv_cache_dtype, …`.
pub fn knobs_and_aliases() -> String {
    KNOB_ALIASES
        .iter()
        .map(|(knob, names)| match names.is_empty() {
            true => knob.to_string(),
            false => format!("{knob} ({})", names.join(", ")),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Grid parameters that are not server settings: the configuration's GPU
/// count, its name, the script that starts its server (`launch`, as
/// `plan --grid-out` writes it), the endpoints its servers' metrics are
/// read at (`metrics`) and how many ports it takes (`ports`).
pub fn is_bookkeeping(param: &str) -> bool {
    matches!(param, "gpus" | "id" | "launch" | "metrics" | "ports")
}

/// A precision as the simulator names it (`bfloat16` and `fp16` are `bf16`,
/// `nvfp4` is `fp4`); other text as given, in lower case.
fn precision_name(v: &str) -> String {
    let v = v.trim().to_ascii_lowercase();
    match v.as_str() {
        "bf16" | "bfloat16" | "fp16" | "float16" | "half" => "bf16".into(),
        "fp8" | "float8" | "fp8-e4m3" => "fp8".into(),
        "int8" | "w8a16" => "int8".into(),
        "int4" | "w4a16" | "awq" | "gptq" => "int4".into(),
        "fp4" | "nvfp4" | "float4" | "fp4-e2m1" => "fp4".into(),
        _ => v,
    }
}

/// A KV-cache dtype as the simulator names it: `auto` for the activations'
/// width under any of its names (`bf16`, `fp16`), `fp8` for SGLang's
/// `fp8_e4m3` and vLLM's `fp8_e5m2` too (one byte an element either way);
/// other text as given, in lower case.
fn kv_cache_name(v: &str) -> String {
    let v = v.trim().to_ascii_lowercase().replace('-', "_");
    match v.as_str() {
        "auto" | "bf16" | "bfloat16" | "fp16" | "float16" | "half" => "auto".into(),
        "fp8" | "fp8_e4m3" | "fp8_e5m2" | "float8" => "fp8".into(),
        _ => v,
    }
}

/// A switch's setting (`mixed_batches`, SGLang's `enable_mixed_chunk`;
/// `internal_lb`; `async_scheduling`): on (`true`, `yes`, `1`, `on`) or off
/// (`false`, `no`, `0`, `off`); `None` for other text.
pub fn switch_value(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" | "on" => Some(true),
        "false" | "no" | "0" | "off" => Some(false),
        _ => None,
    }
}

/// A router's policy as the simulator names it (`round-robin`,
/// `least-loaded`, `prefix-aware`, `power-of-two`), from that or a router's
/// own name for it (vLLM router's and SGLang's `round_robin`, `cache_aware`
/// and `power_of_two`, SGLang's `total_requests` and its older
/// `shortest_queue`); `None` for another.
pub fn router_name(v: &str) -> Option<&'static str> {
    match v.trim().to_ascii_lowercase().replace('_', "-").as_str() {
        "round-robin" | "roundrobin" | "rr" => Some("round-robin"),
        "least-loaded" | "least-load" | "total-requests" | "shortest-queue" => Some("least-loaded"),
        "prefix-aware" | "cache-aware" | "prefix" => Some("prefix-aware"),
        "power-of-two" | "poweroftwo" | "p2c" => Some("power-of-two"),
        _ => None,
    }
}

/// Whether two values of `knob` are the same setting: equal numbers, the
/// same precision or router policy under its other names, else the same
/// text ignoring case.
pub fn same_value(knob: &str, a: &str, b: &str) -> bool {
    if knob == "precision" {
        return precision_name(a) == precision_name(b);
    }
    if knob == "kv_cache_dtype" {
        return kv_cache_name(a) == kv_cache_name(b);
    }
    if let ("router", Some(x), Some(y)) = (knob, router_name(a), router_name(b)) {
        return x == y;
    }
    if knob == RANK_BALANCE {
        return param_key(a) == param_key(b);
    }
    if let ("internal_lb" | "async_scheduling", Some(x), Some(y)) = (knob, switch_value(a), switch_value(b)) {
        return x == y;
    }
    match (a.trim().parse::<f64>(), b.trim().parse::<f64>()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a.trim().eq_ignore_ascii_case(b.trim()),
    }
}

/// The knob SGLang's `load_balance_method` is on a configuration with
/// ranks of DP attention ([`sglang_ranks`]): the rank each request goes
/// to, not a router's replica (`plan --load-balance-method` searches it).
pub const RANK_BALANCE: &str = "load_balance_method";

/// The value a configuration's settings give `knob`, under its own name or
/// another ([`knob_of`]), trimmed and in lower case.
fn knob_value(params: &crate::doc::frontier::ParamMap, knob: &str) -> Option<String> {
    params.iter().find(|(k, _)| knob_of(k) == Some(knob)).map(|(_, v)| v.trim().to_ascii_lowercase())
}

/// Whether a configuration's settings run SGLang's scheduler over ranks of
/// DP attention (more `ep` than `tp`, in either pool of a `pd`, whose
/// sides may name their own, `1xEP8:1xEP16`) or over replicas of a dense
/// model (`dp` above 1, no `pd`), among which its controller picks.
fn sglang_ranks(params: &crate::doc::frontier::ParamMap) -> bool {
    let of = |knob: &str| knob_value(params, knob);
    let size = |knob: &str| of(knob).and_then(|v| v.parse::<u32>().ok()).unwrap_or(1);
    if of("scheduler").as_deref() != Some("sglang") {
        return false;
    }
    let (tp, ep) = (size("tp"), size("ep"));
    // Each side's own sizes where it names them (`2xTP1xEP8`), as the
    // simulator reads them.
    match of("pd") {
        Some(pd) => crate::doc::config::pd_sides(&pd)
            .is_some_and(|sides| sides.iter().any(|&(_, t, e)| e.unwrap_or(ep) > t.unwrap_or(tp))),
        None => ep > tp || size("dp") > 1,
    }
}

/// A configuration's settings as knobs: knob → value, and the parameters
/// that map onto none (bookkeeping ones left out). SGLang's
/// `load_balance_method` is the router's knob, but on a configuration with
/// ranks of DP attention their own ([`RANK_BALANCE`]).
pub fn knobs_of(params: &crate::doc::frontier::ParamMap) -> (BTreeMap<&'static str, String>, Vec<String>) {
    let mut knobs = BTreeMap::new();
    let mut other = Vec::new();
    let ranks = sglang_ranks(params);
    for (k, v) in params {
        if ranks && param_key(k) == RANK_BALANCE {
            knobs.insert(RANK_BALANCE, v.clone());
            continue;
        }
        match knob_of(k) {
            Some(knob) => {
                knobs.insert(knob, v.clone());
            }
            None if is_bookkeeping(k) => {}
            None => other.push(k.clone()),
        }
    }
    (knobs, other)
}

/// The figures compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Figure {
    /// Output tokens/s per GPU.
    OutputTokensPerSPerGpu,
    /// Tokens/s per user (1000 / TPOT).
    TokensPerSPerUser,
    /// TTFT at the documents' percentile.
    TtftMs,
    /// Output tokens/s of the requests that met the SLO, per GPU.
    GoodputTokensPerSPerGpu,
}

impl Figure {
    pub const ALL: [Figure; 4] =
        [Figure::OutputTokensPerSPerGpu, Figure::TokensPerSPerUser, Figure::TtftMs, Figure::GoodputTokensPerSPerGpu];

    pub fn label(self) -> &'static str {
        match self {
            Figure::OutputTokensPerSPerGpu => "tok/s/GPU",
            Figure::TokensPerSPerUser => "tok/s/user",
            Figure::TtftMs => "TTFT ms",
            Figure::GoodputTokensPerSPerGpu => "goodput/GPU",
        }
    }

    pub fn key(self) -> &'static str {
        match self {
            Figure::OutputTokensPerSPerGpu => "output_tokens_per_s_per_gpu",
            Figure::TokensPerSPerUser => "tokens_per_s_per_user",
            Figure::TtftMs => "ttft_ms",
            Figure::GoodputTokensPerSPerGpu => "goodput_tokens_per_s_per_gpu",
        }
    }

    fn of(self, p: &FrontierPoint, gpus: u32) -> Option<f64> {
        let v = match self {
            Figure::OutputTokensPerSPerGpu => Some(p.output_tokens_per_s_per_gpu),
            Figure::TokensPerSPerUser => p.tokens_per_s_per_user,
            Figure::TtftMs => p.ttft_ms,
            Figure::GoodputTokensPerSPerGpu => p.goodput_tokens_per_s.map(|g| g / f64::from(gpus.max(1))),
        };
        v.filter(|v| v.is_finite())
    }
}

/// One figure at one point: predicted, measured, and the prediction's
/// signed relative error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FigureValue {
    pub figure: Figure,
    pub predicted: Option<f64>,
    pub measured: Option<f64>,
    /// (predicted − measured) / |measured|: positive where the prediction
    /// was too high. Absent when either side lacks the figure or the
    /// measured value is zero.
    pub error: Option<f64>,
}

/// A measured point and the prediction at its load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct PointError {
    /// The measured point's load (all replicas).
    pub load: Load,
    /// The load per replica the curves were read at.
    pub load_per_replica: f64,
    /// The predicted figures were interpolated (linearly in load) between
    /// the two predicted points around it, rather than read at a predicted
    /// point of the same load.
    pub interpolated: bool,
    pub figures: Vec<FigureValue>,
}

/// A measured point with no prediction to set against it, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct UncomparedPoint {
    pub load: Load,
    pub reason: String,
}

/// A figure's error over several points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FigureSummary {
    pub figure: Figure,
    /// Points with an error for this figure.
    pub points: usize,
    /// Median of |error| (a share: 0.1 is 10%); absent without points.
    pub median_abs_error: Option<f64>,
    /// Median of the signed error: its sign says which way the prediction leans.
    pub median_error: Option<f64>,
}

/// A configuration found on both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ConfigPair {
    /// The predicted configuration's id.
    pub predicted: String,
    /// The measured configuration's id.
    pub measured: String,
    /// The knobs they were paired on, with the measured value.
    pub knobs: BTreeMap<String, String>,
    /// Measured settings that map onto no knob of the simulator: the
    /// prediction does not see them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmapped: Vec<String>,
    /// The predicted configuration's replicas, and the measured one's
    /// (its `dp`, else 1): loads are compared per replica.
    pub predicted_replicas: u32,
    pub measured_replicas: u32,
    pub points: Vec<PointError>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub uncompared: Vec<UncomparedPoint>,
    pub summary: Vec<FigureSummary>,
    /// Where the configuration drafts: how its drafts fared against what
    /// the prediction assumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drafts: Option<DraftCheck>,
}

/// A drafting configuration's drafts, assumed and measured: the
/// assumption a speculative prediction rests on, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct DraftCheck {
    /// Draft tokens a step (`spec_tokens`).
    pub tokens: u32,
    /// The first draft token's acceptance the prediction assumed: its
    /// `spec_acceptance`, else what its engine's draws gave.
    pub assumed_acceptance: Option<f64>,
    /// The first draft token's acceptance measured: the median of the
    /// measured points' (the server's per-position counters), else the
    /// acceptance whose chain gives the tokens a step measured; absent
    /// where the server counted no drafts.
    pub measured_acceptance: Option<f64>,
    /// Tokens a step yields per sequence (the bonus token included): the
    /// median of the predicted points', and of the measured ones'.
    pub predicted_accepted_length: Option<f64>,
    pub measured_accepted_length: Option<f64>,
    /// In words, with the flag to predict again with where they differ.
    pub verdict: String,
}

/// The acceptance `a` whose chain of `k` drafts (position `i` accepted in
/// `a^(i+1)` of steps, as the engine draws them) yields `length` tokens a
/// step: 1 + a + … + a^k = `length`, solved by bisection. `None` outside
/// what `k` drafts can yield (1 to k + 1).
pub fn acceptance_for_length(length: f64, k: u32) -> Option<f64> {
    let yields = |a: f64| (0..=k).map(|i| a.powi(i as i32)).sum::<f64>();
    if !(1.0..=f64::from(k) + 1.0).contains(&length) || k == 0 {
        return None;
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if yields(mid) < length {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo + hi) / 2.0)
}

/// How far the measured first-token acceptance may lie from the assumed
/// one and still be called as assumed: 5 points.
const ACCEPTANCE_CLOSE: f64 = 0.05;

/// The drafts of a predicted configuration that drafts, against its
/// measured partner's points.
fn draft_check(pc: &FrontierConfig, predicted: &[FrontierPoint], meas: &FrontierConfig) -> Option<DraftCheck> {
    let tokens = pc.params.get("spec_tokens").and_then(|v| v.trim().parse::<u32>().ok()).filter(|&k| k > 0)?;
    let of = |points: &[FrontierPoint], f: fn(&PointSpecDecode) -> Option<f64>| {
        median(points.iter().filter_map(|p| p.spec_decode.as_ref().and_then(f)).collect())
    };
    // A plan names it; a sweep's prediction took it from its flag, and its
    // engine's draws give it back.
    let assumed = pc
        .params
        .get("spec_acceptance")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .or_else(|| of(predicted, |s| s.first_acceptance));
    let predicted_length = of(predicted, |s| s.mean_accepted_length);
    let measured_length = of(&meas.points, |s| s.mean_accepted_length);
    let counted = of(&meas.points, |s| s.first_acceptance);
    let measured = counted.or_else(|| measured_length.and_then(|l| acceptance_for_length(l, tokens)));
    let pc_ = |v: f64| format!("{:.0} %", v * 100.0);
    let how = if counted.is_some() {
        "the first draft token was accepted in"
    } else {
        "its tokens a step make the first draft token's acceptance"
    };
    let verdict = match (measured, assumed) {
        (None, Some(a)) => format!(
            "the server counted no drafts (its /metrics not scraped, or none that count them): the {} acceptance \
             the prediction assumed stands unchecked",
            pc_(a)
        ),
        (None, None) => "the server counted no drafts, and the prediction names no acceptance".into(),
        (Some(m), Some(a)) if (m - a).abs() <= ACCEPTANCE_CLOSE => {
            format!("{how} {} of steps, as the {} assumed (within 5 points)", pc_(m), pc_(a))
        }
        (Some(m), Some(a)) => format!(
            "{how} {} of steps, against the {} the prediction assumed: predict again with --spec-acceptance {:.2}",
            pc_(m),
            pc_(a),
            m
        ),
        (Some(m), None) => format!("{how} {} of steps: predict with --spec-acceptance {m:.2}", pc_(m)),
    };
    Some(DraftCheck {
        tokens,
        assumed_acceptance: assumed,
        measured_acceptance: measured,
        predicted_accepted_length: predicted_length,
        measured_accepted_length: measured_length,
        verdict,
    })
}

/// A configuration on one side only, and why it has no partner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct Unmatched {
    pub source: FrontierSource,
    pub config: String,
    pub reason: String,
}

/// The prediction's best configuration, checked against the measurement:
/// the measured best, and what the prediction's choice gave as measured,
/// each by the figure the measured document ranks by.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct ChoiceCheck {
    /// The prediction's best point's configuration (its id there).
    pub predicted_best: String,
    /// The measured configuration paired with it; absent when none was.
    pub measured_partner: Option<String>,
    /// The measured document's best point's configuration; absent when no
    /// measured point may be the best (none met the SLO).
    pub measured_best: Option<String>,
    /// What both are ranked by: `good_tokens_per_usd`, or
    /// `good_tokens_per_s_per_gpu` where some measured configuration has no
    /// price (without an SLO every output token counts as good).
    pub ranked_by: String,
    /// The measured best's value of that figure.
    pub measured_best_value: Option<f64>,
    /// The measured partner's best value of it, over its points that may
    /// be the best; absent when none may (it missed the SLO at every load).
    pub partner_value: Option<f64>,
    /// Whether the measured best is the prediction's choice; absent where
    /// either is missing.
    pub agrees: Option<bool>,
    /// The check in a line.
    pub verdict: String,
}

/// The prediction's choice against the measurement (see [`ChoiceCheck`]).
fn check_choice(pred: &FrontierResult, meas: &FrontierResult, pairs: &[ConfigPair]) -> Option<ChoiceCheck> {
    use crate::doc::frontier::{count, may_be_best, ranked_value, ranks_per_usd};
    let best = pred.best.as_ref()?;
    let chosen = pred.configs.get(best.at.config)?.id.clone();
    let per_usd = ranks_per_usd(meas);
    let tokens = if meas.slo.is_some() { "good output tokens" } else { "output tokens" };
    let (ranked_by, unit) = match per_usd {
        true => ("good_tokens_per_usd", format!("{tokens} per $")),
        false => ("good_tokens_per_s_per_gpu", format!("{tokens}/s per GPU")),
    };
    let value_of = |ci: usize| {
        let c = &meas.configs[ci];
        c.points.iter().filter(|p| may_be_best(meas, p)).map(|p| ranked_value(c, p, per_usd)).reduce(f64::max)
    };
    let partner = pairs.iter().find(|p| p.predicted == chosen).map(|p| p.measured.clone());
    let partner_value = partner.as_ref().and_then(|m| meas.configs.iter().position(|c| &c.id == m)).and_then(value_of);
    let measured_best = meas.best.as_ref().and_then(|b| meas.configs.get(b.at.config)).map(|c| c.id.clone());
    let measured_best_value =
        meas.best.as_ref().and_then(|b| Some(ranked_value(meas.configs.get(b.at.config)?, meas.point(b.at)?, per_usd)));
    let agrees = match (&partner, &measured_best) {
        (Some(p), Some(b)) => Some(p == b),
        _ => None,
    };
    // The measured configuration, and the prediction's name for it where
    // that differs (a grid from plan --grid-out keeps the plan's ids).
    let as_chosen = |m: &str| match m == chosen {
        true => format!("{m}, the prediction's best,"),
        false => format!("{m}, the prediction's best ({chosen}),"),
    };
    let verdict = match (&partner, &measured_best, partner_value, measured_best_value) {
        (None, _, _, _) => format!(
            "the prediction's best, {chosen}, was not measured: no measured configuration has its settings \
             (plan --grid-out writes it in the grid)"
        ),
        (Some(m), None, _, _) => format!(
            "the measurement has no best point to set the prediction's best against ({}); {} as measured, \
             {}",
            crate::doc::frontier::no_best_reason(meas),
            as_chosen(m).trim_end_matches(','),
            match partner_value {
                Some(v) => format!("gave {} {unit}", count(v)),
                None => "has no point that may be the best either".into(),
            }
        ),
        (Some(m), Some(b), None, Some(vb)) => format!(
            "the prediction's best, {chosen}, measured as {m}, met the SLO at no load; the measured best is {b} \
             ({} {unit})",
            count(vb)
        ),
        (Some(m), Some(b), Some(vm), _) if m == b => {
            format!("the measurement agrees: {} is the measured best too ({} {unit})", as_chosen(m), count(vm))
        }
        (Some(m), Some(b), Some(vm), Some(vb)) => format!(
            "the measurement chose otherwise: {b} gave {} {unit}, and {} gave {} ({:+.0}% against the measured best)",
            count(vb),
            as_chosen(m),
            count(vm),
            (vm / vb - 1.0) * 100.0
        ),
        (Some(_), Some(b), _, None) => format!("the measured best is {b}"),
    };
    Some(ChoiceCheck {
        predicted_best: chosen,
        measured_partner: partner,
        measured_best,
        ranked_by: ranked_by.into(),
        measured_best_value,
        partner_value,
        agrees,
        verdict,
    })
}

/// A predicted frontier beside a measured one (`kind` `frontier_compare`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(JsonSchema))]
pub struct FrontierComparison {
    /// `goodput/v1`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = crate::SCHEMA)))]
    pub schema: String,
    /// `frontier_compare`.
    #[cfg_attr(feature = "schema", schemars(extend("const" = "frontier_compare")))]
    pub kind: String,
    /// The files (or names) of the two documents.
    pub predicted_label: String,
    pub measured_label: String,
    pub pairs: Vec<ConfigPair>,
    pub unmatched: Vec<Unmatched>,
    /// Every compared point of every pair together.
    pub overall: Vec<FigureSummary>,
    /// The prediction's best configuration set against what was measured:
    /// whether the measurement would choose it too (absent when the
    /// prediction chose none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choice: Option<ChoiceCheck>,
    pub notes: Vec<String>,
    /// Both documents, for the chart.
    pub predicted: FrontierResult,
    pub measured: FrontierResult,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn summarize<'a>(points: impl Iterator<Item = &'a PointError> + Clone) -> Vec<FigureSummary> {
    Figure::ALL
        .iter()
        .map(|&f| {
            let errs: Vec<f64> = points
                .clone()
                .flat_map(|p| p.figures.iter())
                .filter(|v| v.figure == f)
                .filter_map(|v| v.error)
                .collect();
            FigureSummary {
                figure: f,
                points: errs.len(),
                median_abs_error: median(errs.iter().map(|e| e.abs()).collect()),
                median_error: median(errs),
            }
        })
        .collect()
}

/// A configuration's replicas: its `dp` knob, else 1.
fn replicas(c: &FrontierConfig) -> u32 {
    let (k, _) = knobs_of(&c.params);
    k.get("dp").and_then(|v| v.trim().parse::<u32>().ok()).filter(|&d| d > 0).unwrap_or(1)
}

/// A predicted configuration's points: its own, or, for a batch limit
/// `plan` did not simulate again (its curve is a prefix of the widest
/// limit's), the widest's points up to its limit.
pub fn predicted_points(doc: &FrontierResult, ci: usize) -> Vec<FrontierPoint> {
    let c = &doc.configs[ci];
    if !c.points.is_empty() {
        return c.points.clone();
    }
    let Some(seqs) = c.params.get("max_num_seqs").and_then(|v| v.parse::<u64>().ok()) else {
        return Vec::new();
    };
    let rest = |o: &FrontierConfig| {
        let mut p = o.params.clone();
        p.shift_remove("max_num_seqs");
        p
    };
    let wider = doc.configs.iter().filter(|o| o.status == ConfigStatus::Ok && !o.points.is_empty()).find(|o| {
        rest(o) == rest(c) && o.params.get("max_num_seqs").and_then(|v| v.parse::<u64>().ok()).is_some_and(|s| s > seqs)
    });
    let dp = u64::from(replicas(c));
    wider.map_or_else(Vec::new, |w| {
        w.points.iter().filter(|p| matches!(p.load, Load::Concurrency(n) if n <= seqs * dp)).cloned().collect()
    })
}

/// The predicted configuration a measured one pairs with, or why none.
enum Partner {
    One(usize),
    None(String),
}

/// Whether two values of `knob` on a predicted configuration of `params`
/// are the same setting ([`same_value`]); SGLang's `auto` is its
/// `round_robin` there but on a disaggregated one, whose prefill instances
/// it sends by the bootstrap room (a plan names `round_robin` on a dense
/// model's replicas in closed loops, where a grid of one's own may say
/// `auto` or nothing).
fn same_setting(params: &crate::doc::frontier::ParamMap, knob: &str, a: &str, b: &str) -> bool {
    let auto = |v: &str| match param_key(v).as_str() {
        "auto" if knob == RANK_BALANCE && knob_value(params, "pd").is_none() => "round_robin".to_string(),
        other => other.to_string(),
    };
    same_value(knob, a, b) || (knob == RANK_BALANCE && auto(a) == auto(b))
}

fn partner(pred: &FrontierResult, m: &FrontierConfig) -> Partner {
    let (knobs, _) = knobs_of(&m.params);
    if knobs.is_empty() && pred.configs.len() > 1 {
        return Partner::None(format!(
            "none of its settings ({}) maps onto a knob of the simulator ({})",
            m.params.keys().cloned().collect::<Vec<_>>().join(", "),
            KNOBS.join(", ")
        ));
    }
    let candidates: Vec<usize> = (0..pred.configs.len())
        .filter(|&i| {
            let p = &pred.configs[i].params;
            let (pk, _) = knobs_of(p);
            knobs.iter().all(|(k, v)| match pk.get(k) {
                Some(pv) => same_setting(p, k, pv, v),
                // The GPU as the catalog names it, when the plan's --gpu name differs.
                None if *k == "gpu" => pred.configs[i].gpu.as_deref().is_some_and(|g| same_value(k, g, v)),
                None => absent_value(p, k).is_some_and(|d| same_setting(p, k, d, v)),
            })
        })
        .collect();
    let mut left = candidates.clone();
    if left.len() > 1 {
        // The same GPU count, when that tells them apart.
        let same: Vec<usize> = left.iter().copied().filter(|&i| pred.configs[i].gpus == m.gpus).collect();
        if !same.is_empty() {
            left = same;
        }
    }
    if left.len() > 1 {
        // A knob the measured one leaves out is at its default there (no
        // drafts, SGLang's `auto`): the candidate at those defaults, when
        // that tells them apart.
        let defaults: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| {
                let p = &pred.configs[i].params;
                let (pk, _) = knobs_of(p);
                pk.iter().filter(|(k, _)| !knobs.contains_key(*k)).all(|(k, v)| match absent_value(p, k) {
                    Some(d) => same_setting(p, k, d, v),
                    None => true,
                })
            })
            .collect();
        if defaults.len() == 1 {
            left = defaults;
        }
    }
    match left.as_slice() {
        [one] => Partner::One(*one),
        [] => {
            let shown: Vec<String> = knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
            Partner::None(format!("no predicted configuration has {}", shown.join(", ")))
        }
        many => {
            // The knobs on which the candidates differ.
            let mut differ: Vec<&str> = KNOBS
                .iter()
                .copied()
                .chain([RANK_BALANCE])
                .filter(|k| {
                    let vals: Vec<Option<&String>> = many.iter().map(|&i| pred.configs[i].params.get(*k)).collect();
                    vals.windows(2).any(|w| w[0] != w[1])
                })
                .collect();
            differ.dedup();
            Partner::None(format!(
                "it matches {} predicted configurations ({}): give the grid a parameter for {} so that one is chosen",
                many.len(),
                many.iter().map(|&i| pred.configs[i].id.as_str()).collect::<Vec<_>>().join(", "),
                if differ.is_empty() { "what tells them apart".into() } else { differ.join(", ") }
            ))
        }
    }
}

/// The predicted figure at `load` (per replica), on a curve of points
/// (load per replica, point) in rising load: read at a point of that load,
/// or interpolated linearly between its neighbours; `None` outside.
fn at_load(curve: &[(f64, &FrontierPoint)], load: f64, f: Figure, gpus: u32) -> Option<(Option<f64>, bool)> {
    if let Some((_, p)) = curve.iter().find(|(l, _)| (l - load).abs() <= 1e-9 * load.abs().max(1.0)) {
        return Some((f.of(p, gpus), false));
    }
    let i = curve.iter().position(|(l, _)| *l > load)?;
    if i == 0 {
        return None;
    }
    let ((l0, p0), (l1, p1)) = (curve[i - 1], curve[i]);
    let v = match (f.of(p0, gpus), f.of(p1, gpus)) {
        (Some(a), Some(b)) => Some(a + (b - a) * (load - l0) / (l1 - l0)),
        _ => None,
    };
    Some((v, true))
}

fn kind_of(l: Load) -> &'static str {
    match l {
        Load::Concurrency(_) => "concurrency",
        Load::Rate(_) => "rate",
    }
}

fn pair(pred: &FrontierResult, pi: usize, meas: &FrontierConfig) -> ConfigPair {
    let pc = &pred.configs[pi];
    let points = predicted_points(pred, pi);
    let (pr, mr) = (replicas(pc), replicas(meas));
    let (knobs, unmapped) = knobs_of(&meas.params);
    let mut curve: Vec<(f64, &FrontierPoint)> = points.iter().map(|p| (p.load.value() / f64::from(pr), p)).collect();
    curve.sort_by(|a, b| a.0.total_cmp(&b.0));
    let pred_kind = points.first().map(|p| kind_of(p.load));
    let mut out = Vec::new();
    let mut uncompared = Vec::new();
    for m in &meas.points {
        let load = m.load.value() / f64::from(mr);
        if pred_kind.is_some_and(|k| k != kind_of(m.load)) {
            uncompared.push(UncomparedPoint {
                load: m.load,
                reason: format!("measured at a {}, predicted at a {}", kind_of(m.load), pred_kind.unwrap_or("-")),
            });
            continue;
        }
        let mut figures = Vec::new();
        let mut interpolated = false;
        let mut inside = true;
        for f in Figure::ALL {
            let Some((p, interp)) = at_load(&curve, load, f, pc.gpus) else {
                inside = false;
                break;
            };
            interpolated |= interp;
            let mv = f.of(m, meas.gpus);
            let error = match (p, mv) {
                (Some(p), Some(mv)) if mv != 0.0 => Some((p - mv) / mv.abs()),
                _ => None,
            };
            figures.push(FigureValue { figure: f, predicted: p, measured: mv, error });
        }
        if !inside {
            let range = match (curve.first(), curve.last()) {
                (Some(a), Some(b)) => format!("{}–{} per replica", trim(a.0), trim(b.0)),
                _ => "none".into(),
            };
            uncompared.push(UncomparedPoint {
                load: m.load,
                reason: format!(
                    "{} per replica lies outside the predicted curve's loads ({range}; plan stops a curve at its first \
                     miss of the SLO or where its throughput stops rising, and nothing is extrapolated)",
                    trim(load)
                ),
            });
            continue;
        }
        out.push(PointError { load: m.load, load_per_replica: load, interpolated, figures });
    }
    let summary = summarize(out.iter());
    let drafts = draft_check(pc, &points, meas);
    ConfigPair {
        predicted: pc.id.clone(),
        measured: meas.id.clone(),
        knobs: knobs.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        unmapped,
        predicted_replicas: pr,
        measured_replicas: mr,
        points: out,
        uncompared,
        summary,
        drafts,
    }
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Sets the measured frontier against the predicted one.
pub fn compare_frontiers(predicted: (&str, FrontierResult), measured: (&str, FrontierResult)) -> FrontierComparison {
    let (pl, pred) = predicted;
    let (ml, meas) = measured;
    let mut pairs = Vec::new();
    let mut unmatched = Vec::new();
    let mut used = vec![false; pred.configs.len()];
    let mut notes = Vec::new();
    for m in &meas.configs {
        if m.status == ConfigStatus::Failed {
            unmatched.push(Unmatched {
                source: FrontierSource::Measured,
                config: m.id.clone(),
                reason: format!("it failed: {}", m.error.as_deref().unwrap_or("see its log")),
            });
            continue;
        }
        match partner(&pred, m) {
            Partner::One(pi) if pred.configs[pi].status == ConfigStatus::Failed => {
                used[pi] = true;
                unmatched.push(Unmatched {
                    source: FrontierSource::Measured,
                    config: m.id.clone(),
                    reason: format!(
                        "its predicted configuration {} failed: {}",
                        pred.configs[pi].id,
                        pred.configs[pi].error.as_deref().unwrap_or("-")
                    ),
                });
            }
            Partner::One(pi) => {
                used[pi] = true;
                pairs.push(pair(&pred, pi, m));
            }
            Partner::None(reason) => {
                unmatched.push(Unmatched { source: FrontierSource::Measured, config: m.id.clone(), reason })
            }
        }
    }
    for c in pred.configs.iter().zip(&used).filter(|(_, u)| !**u).map(|(c, _)| c) {
        unmatched.push(Unmatched {
            source: FrontierSource::Predicted,
            config: c.id.clone(),
            reason: "no measured configuration has its settings".into(),
        });
    }
    let mut shared: Vec<String> = pairs.iter().flat_map(|p| p.unmapped.iter().cloned()).collect();
    shared.sort();
    shared.dedup();
    if !shared.is_empty() {
        notes.push(format!(
            "measured settings the simulator has no knob for: {} (each of their values is set against the same \
             prediction; the knobs are {})",
            shared.join(", "),
            KNOBS.join(", ")
        ));
    }
    if pred.source == meas.source {
        notes.push(format!(
            "both documents are {} frontiers: the first ({pl}) stands for the prediction",
            pred.source.as_str()
        ));
    }
    if (pred.percentile - meas.percentile).abs() > 1e-9 {
        notes.push(format!(
            "the predicted latencies are at p{} and the measured at p{}: TTFT and tokens/s per user differ by that too",
            pred.percentile, meas.percentile
        ));
    }
    // The measurement shows how far off such a GPU's predictions were; the
    // comparison says why they may be (the errors had read as the engine's
    // usual ones).
    if !pred.uncalibrated_gpus.is_empty() {
        notes.push(format!(
            "the prediction ran {} on another family's constants (uncalibrated): its errors there are not the \
             engine's calibrated ones",
            pred.uncalibrated_gpus.join(", ")
        ));
    }
    // By name, case aside: a sweep keeps its --model as typed
    // (`llama-3.1-8b`), a plan the catalog's name (`Llama-3.1-8B`).
    if !pred.model.is_empty() && !meas.model.is_empty() && !pred.model.eq_ignore_ascii_case(&meas.model) {
        notes.push(format!("the predicted model is {} and the measured one {}", pred.model, meas.model));
    }
    // Users in conversations load a server otherwise than users of single
    // requests (their history cached, their pauses): a pair of frontiers
    // whose loads differ so compares different loads at one count of users.
    if pred.sessions != meas.sessions {
        let said = |s: &Option<crate::doc::config::SessionsConfig>| match s {
            Some(s) => format!("sessions of --turns {} with --think-time {}", s.turns, s.think_time),
            None => "single requests".to_string(),
        };
        notes.push(format!(
            "the prediction's users sent {} and the measurement's {}: a load of as many users is not the same load",
            said(&pred.sessions),
            said(&meas.sessions)
        ));
    }
    // A stopped search or sweep holds the configurations done until then:
    // the others are unmatched for that, not for their settings.
    let stopped: Vec<&str> =
        [(pl, &pred), (ml, &meas)].into_iter().filter(|(_, d)| d.interrupted).map(|(l, _)| l).collect();
    if !stopped.is_empty() {
        notes.push(format!(
            "{} {} interrupted: {} the configurations done before the stop, so a configuration {} may be one \
             never reached",
            stopped.join(" and "),
            if stopped.len() == 1 { "was" } else { "were" },
            if stopped.len() == 1 { "it holds" } else { "each holds" },
            if stopped.len() == 1 { "it lacks" } else { "either lacks" }
        ));
    }
    let overall = summarize(pairs.iter().flat_map(|p| p.points.iter()));
    let choice = check_choice(&pred, &meas, &pairs);
    FrontierComparison {
        schema: crate::SCHEMA.into(),
        kind: "frontier_compare".into(),
        predicted_label: pl.into(),
        measured_label: ml.into(),
        pairs,
        unmatched,
        overall,
        choice,
        notes,
        predicted: pred,
        measured: meas,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::config::Extra;
    use crate::doc::frontier::analyze_frontier;
    use crate::doc::result::Tool;

    /// Every knob has its names, in the same order as [`KNOBS`]; every name
    /// maps back to its knob; and the list an error gives names them all
    /// (it had left out `seqs` and `mbt`, which worked).
    #[test]
    fn every_knob_and_each_of_its_names_map_back_and_are_listed() {
        let knobs: Vec<&str> = KNOB_ALIASES.iter().map(|(k, _)| *k).collect();
        assert_eq!(knobs, KNOBS);
        let listed = knobs_and_aliases();
        for (knob, names) in KNOB_ALIASES {
            assert_eq!(knob_of(knob), Some(knob));
            for name in names {
                assert_eq!(knob_of(name), Some(knob), "{name}");
                assert_eq!(knob_of(&format!("--{}", name.replace('_', "-").to_uppercase())), Some(knob), "{name}");
                assert!(listed.contains(name), "{name} is not in {listed}");
            }
        }
        assert_eq!(knob_of("temperature"), None);
    }

    /// The acceptance a chain of drafts' tokens a step implies is the one
    /// that yields them; and a drafting pair's verdict follows what the
    /// server counted: as assumed, another to predict with, or unchecked.
    #[test]
    fn a_drafting_pair_checks_the_acceptance_the_prediction_assumed() {
        let length = 1.0 + 0.7 + 0.49 + 0.343;
        assert!((acceptance_for_length(length, 3).unwrap() - 0.7).abs() < 1e-9);
        assert!(acceptance_for_length(1.0, 3).unwrap() < 1e-9);
        assert_eq!(acceptance_for_length(4.5, 3), None, "3 drafts yield at most 4 tokens");
        assert_eq!(acceptance_for_length(2.0, 0), None);
        let with = |first: Option<f64>, length: Option<f64>| {
            let mut p = point(4, 100.0, 50.0, 20.0);
            p.spec_decode = Some(PointSpecDecode { first_acceptance: first, mean_accepted_length: length });
            p
        };
        let params = |acc: &str| -> crate::doc::frontier::ParamMap {
            [("spec_tokens", "3"), ("spec_acceptance", acc)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let config = |acc: &str, points: Vec<FrontierPoint>| {
            let mut c = FrontierConfig::new("c".into(), params(acc), None, 1, None);
            c.points = points;
            c
        };
        let predicted = vec![with(Some(0.7), Some(2.5))];
        let check = |acc: &str, measured: Vec<FrontierPoint>| {
            draft_check(&config(acc, predicted.clone()), &predicted, &config(acc, measured)).unwrap()
        };
        // vLLM's per-position counters: the first position's share, the median over points.
        let d = check("0.7", vec![with(Some(0.5), Some(1.9)), with(Some(0.54), Some(2.0)), with(Some(0.6), None)]);
        assert_eq!((d.measured_acceptance, d.measured_accepted_length), (Some(0.54), Some(1.95)));
        assert!(d
            .verdict
            .ends_with("against the 70 % the prediction assumed: predict again with --spec-acceptance 0.54"));
        let d = check("0.7", vec![with(Some(0.72), Some(2.6))]);
        assert!(d.verdict.contains("72 % of steps, as the 70 % assumed"), "{}", d.verdict);
        // SGLang's gauges: tokens a step alone, the acceptance solved from them.
        let d = check("0.7", vec![with(None, Some(1.0 + 0.5 + 0.25 + 0.125))]);
        assert!((d.measured_acceptance.unwrap() - 0.5).abs() < 1e-9);
        assert!(
            d.verdict.starts_with("its tokens a step make the first draft token's acceptance 50 %"),
            "{}",
            d.verdict
        );
        // Nothing counted.
        let d = check("0.7", vec![point(4, 100.0, 50.0, 20.0)]);
        assert!(d.measured_acceptance.is_none() && d.verdict.contains("stands unchecked"), "{}", d.verdict);
        // A configuration that does not draft has no check.
        let plain = FrontierConfig::new("p".into(), Default::default(), None, 1, None);
        assert!(draft_check(&plain, &predicted, &plain).is_none());
    }

    fn point(users: u64, tput: f64, speed: f64, ttft: f64) -> FrontierPoint {
        FrontierPoint {
            load: Load::Concurrency(users),
            output_tokens_per_s: tput,
            output_tokens_per_s_per_gpu: tput,
            tokens_per_s_per_user: Some(speed),
            ttft_ms: Some(ttft),
            tpot_ms: Some(1000.0 / speed),
            goodput_tokens_per_s: Some(tput),
            meets_slo: Some(true),
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

    fn config(id: &str, params: &[(&str, &str)], points: Vec<FrontierPoint>) -> FrontierConfig {
        FrontierConfig {
            id: id.into(),
            params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            gpu: None,
            gpus: 1,
            gpu_hour_usd: None,
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

    fn doc(source: FrontierSource, configs: Vec<FrontierConfig>) -> FrontierResult {
        let mut d = FrontierResult {
            model: "m".into(),
            configs,
            ..FrontierResult::new(Tool { name: "goodput".into(), version: "0".into(), commit: None }, source, 0.9, 50.0)
        };
        analyze_frontier(&mut d);
        d
    }

    fn plan_params(seqs: &str) -> Vec<(&'static str, String)> {
        vec![
            ("gpu", "h100".into()),
            ("tp", "1".into()),
            ("dp", "1".into()),
            ("precision", "bf16".into()),
            ("max_num_seqs", seqs.into()),
            ("max_num_batched_tokens", "8192".into()),
        ]
    }

    fn planned(id: &str, seqs: &str, points: Vec<FrontierPoint>) -> FrontierConfig {
        let p = plan_params(seqs);
        let refs: Vec<(&str, &str)> = p.iter().map(|(k, v)| (*k, v.as_str())).collect();
        config(id, &refs, points)
    }

    /// SGLang's `load_balance_method` is its own knob under its scheduler,
    /// on ranks of DP attention (colocated, or in either pool of a `pd`),
    /// beside a router between the groups, and on a dense model's replicas
    /// (its controller); the router's under vLLM's scheduler: so a
    /// measured configuration of each method pairs with the plan's of that
    /// method, `auto` where it names none.
    #[test]
    fn sglangs_load_balance_method_is_its_own_knob_on_ranks_of_dp_attention() {
        let params = |kv: &[(&str, &str)]| -> crate::doc::frontier::ParamMap {
            kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let ranks = [("scheduler", "sglang"), ("tp", "1"), ("ep", "4"), ("dp", "8"), ("router", "power_of_two")];
        let (k, other) = knobs_of(&params(&[&ranks[..], &[("load_balance_method", "total_tokens")]].concat()));
        assert_eq!((k[RANK_BALANCE].as_str(), k["router"].as_str(), other.len()), ("total_tokens", "power_of_two", 0));
        let (k, _) =
            knobs_of(&params(&[("scheduler", "sglang"), ("dp", "2"), ("load_balance_method", "total_requests")]));
        assert_eq!((k[RANK_BALANCE].as_str(), k.get("router")), ("total_requests", None));
        let (k, _) = knobs_of(&params(&[("dp", "2"), ("load_balance_method", "total_requests")]));
        assert_eq!((k.get(RANK_BALANCE), k["router"].as_str()), (None, "total_requests"));
        // A pool's own EP makes ranks; under vLLM's scheduler it stays the router's.
        let pools = |pd: &str, scheduler: &str| {
            let (k, _) = knobs_of(&params(&[
                ("scheduler", scheduler),
                ("tp", "1"),
                ("pd", pd),
                ("load_balance_method", "total_tokens"),
            ]));
            k.contains_key(RANK_BALANCE)
        };
        assert!(pools("1:1xEP8", "sglang") && pools("1xTP1xEP4:1", "sglang"));
        // Spelt as the simulator takes it: `×`, any case.
        assert!(pools("1:1×EP8", "sglang") && pools("1 X tp1 X ep4 : 1", "sglang"));
        assert!(!pools("1:1×TP8", "sglang") && !pools("1:1xEP8xEP8", "sglang"));
        assert!(!pools("1:1xTP4", "sglang") && !pools("1:1xEP8", "vllm"));
        // Paired by method, `auto` where the measured names none.
        let pred = doc(
            FrontierSource::Predicted,
            ["auto", "total_tokens"]
                .map(|m| {
                    config(
                        &format!("ep4 {m}"),
                        &[&ranks[..], &[("load_balance_method", m)]].concat(),
                        vec![point(4, 100.0, 50.0, 20.0)],
                    )
                })
                .to_vec(),
        );
        let measured = |m: Option<&str>| {
            let mut kv = ranks.to_vec();
            kv.extend(m.map(|m| ("load_balance_method", m)));
            config("m", &kv, vec![point(4, 90.0, 45.0, 25.0)])
        };
        for (m, want) in [(Some("total-tokens"), 1), (Some("auto"), 0), (None, 0)] {
            match partner(&pred, &measured(m)) {
                Partner::One(i) => assert_eq!(i, want, "{m:?}"),
                Partner::None(why) => panic!("{m:?}: {why}"),
            }
        }
    }

    /// A plan names SGLang's `round_robin` on a dense model's replicas in
    /// closed loops: a measured configuration that says `auto` (the same
    /// there), names none, or spells it `round-robin` pairs with it; one of
    /// `total_requests` does not. On a disaggregated one, `auto` is the
    /// bootstrap room, not round-robin.
    #[test]
    fn sglangs_auto_is_round_robin_but_on_a_disaggregated_configuration() {
        let dense = [("scheduler", "sglang"), ("tp", "1"), ("dp", "4")];
        let pred = doc(
            FrontierSource::Predicted,
            vec![config("rr", &[&dense[..], &[("load_balance_method", "round_robin")]].concat(), vec![])],
        );
        for m in [Some("auto"), None, Some("round-robin")] {
            let mut kv = dense.to_vec();
            kv.extend(m.map(|m| ("load_balance_method", m)));
            assert!(matches!(partner(&pred, &config("m", &kv, vec![])), Partner::One(0)), "{m:?}");
        }
        let other = [&dense[..], &[("load_balance_method", "total_requests")]].concat();
        assert!(matches!(partner(&pred, &config("m", &other, vec![])), Partner::None(_)));
        let apart = [("scheduler", "sglang"), ("tp", "1"), ("ep", "4"), ("pd", "1:1")];
        let params = |m: &str| -> crate::doc::frontier::ParamMap {
            [&apart[..], &[("load_balance_method", m)]]
                .concat()
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert!(same_setting(&params("auto"), RANK_BALANCE, "auto", "auto"));
        assert!(!same_setting(&params("auto"), RANK_BALANCE, "auto", "round_robin"));
        let colocated = crate::doc::frontier::ParamMap::default();
        assert!(same_setting(&colocated, RANK_BALANCE, "auto", "round_robin"));
    }

    /// vLLM's own balancing of its replicas is a switch: a measured
    /// configuration that names it pairs with the predicted one that ran it,
    /// one that does not with the one behind the router.
    #[test]
    fn vllms_internal_balancing_is_a_knob_whose_absence_is_off() {
        assert!(same_value("internal_lb", "true", "On") && !same_value("internal_lb", "true", "false"));
        assert!(same_value("async_scheduling", "yes", "true") && !same_value("async_scheduling", "1", "off"));
        let replicas = [("tp", "1"), ("dp", "2"), ("router", "least-loaded")];
        assert_pairs_by(
            &replicas,
            "internal_lb",
            &[None, Some("true")],
            &[(Some("true"), 1), (Some("false"), 0), (None, 0)],
        );
    }

    /// A step ahead is the servers' default but for vLLM's pipeline
    /// stages: a measured configuration's `async_scheduling` pairs with
    /// the predicted one that leaves it out where it is that default.
    #[test]
    fn a_step_ahead_absent_is_the_servers_default_for_the_configuration() {
        let both = [None, Some("false")];
        assert_pairs_by(
            &[("tp", "2")],
            "async_scheduling",
            &[None, Some("false")],
            &[(Some("true"), 0), (None, 0), (Some("no"), 1)],
        );
        // vLLM with stages: plan names only `true`.
        let stages = [("tp", "2"), ("pp", "2")];
        assert_pairs_by(
            &stages,
            "async_scheduling",
            &[None, Some("true")],
            &[(Some("false"), 0), (None, 0), (Some("on"), 1)],
        );
        // SGLang's stages keep theirs on.
        let sglang = [("scheduler", "sglang"), ("pp", "2")];
        assert_pairs_by(&sglang, "async_scheduling", &both, &[(Some("true"), 0), (Some("false"), 1)]);
    }

    /// Predicted configurations of `base` with `knob` at each of
    /// `predicted` (left out where `None`), and for each measured value of
    /// `cases` (left out where `None`) the index of the predicted one it
    /// pairs with.
    fn assert_pairs_by<'a>(
        base: &[(&'a str, &'a str)],
        knob: &'a str,
        predicted: &[Option<&'a str>],
        cases: &[(Option<&'a str>, usize)],
    ) {
        let with = |v: Option<&'a str>| {
            let mut kv = base.to_vec();
            kv.extend(v.map(|v| (knob, v)));
            kv
        };
        let pred = doc(
            FrontierSource::Predicted,
            predicted.iter().map(|&v| config(&format!("{v:?}"), &with(v), vec![point(4, 100.0, 50.0, 20.0)])).collect(),
        );
        for &(v, want) in cases {
            match partner(&pred, &config("m", &with(v), vec![point(4, 90.0, 45.0, 25.0)])) {
                Partner::One(i) => assert_eq!(i, want, "{knob} {v:?}"),
                Partner::None(why) => panic!("{knob} {v:?}: {why}"),
            }
        }
    }

    /// A plan that searched both KV caches pairs a measured configuration
    /// that names none with its `auto` one (the server's default), and one
    /// of SGLang's `fp8_e4m3` with its FP8 one.
    #[test]
    fn the_kv_cache_dtype_s_absence_is_the_servers_default() {
        assert!(same_value("kv_cache_dtype", "fp8", "FP8_E4M3") && same_value("kv_cache_dtype", "auto", "bf16"));
        assert!(!same_value("kv_cache_dtype", "auto", "fp8"));
        let one = [("tp", "2"), ("precision", "fp8")];
        let cases = [(None, 0), (Some("fp8_e4m3"), 1), (Some("auto"), 0), (Some("fp8"), 1)];
        assert_pairs_by(&one, "kv_cache_dtype", &[Some("auto"), Some("fp8")], &cases);
    }

    #[test]
    fn settings_map_onto_knobs_under_their_servers_names() {
        assert_eq!(knob_of("--max-num-seqs"), Some("max_num_seqs"));
        assert_eq!(knob_of("np"), Some("max_num_seqs"));
        assert_eq!(knob_of("tensor_parallel_size"), Some("tp"));
        assert_eq!(knob_of("quantization"), Some("precision"));
        assert_eq!(knob_of("temperature"), None);
        assert!(same_value("precision", "bfloat16", "BF16"));
        assert!(same_value("max_num_seqs", "64", "64.0"));
        assert!(!same_value("tp", "1", "2"));
        // A router's policy under the routers' own names.
        assert_eq!(knob_of("load_balance_method"), Some("router"));
        assert!(same_value("router", "cache_aware", "prefix-aware"));
        assert!(same_value("router", "shortest_queue", "Least-Loaded"));
        assert!(same_value("router", "total_requests", "least-loaded"));
        assert!(!same_value("router", "round_robin", "least-loaded"));
    }

    #[test]
    fn points_pair_by_load_and_interpolate_between_predicted_loads() {
        let pred = doc(
            FrontierSource::Predicted,
            vec![
                planned("p4", "4", vec![point(1, 100.0, 50.0, 20.0), point(4, 300.0, 40.0, 40.0)]),
                // A batch limit plan did not simulate again: its points are p4's up to 2 users.
                planned("p2", "2", Vec::new()),
                planned("p8", "8", vec![point(1, 100.0, 50.0, 20.0)]),
            ],
        );
        let meas = doc(
            FrontierSource::Measured,
            vec![
                config("seqs=4", &[("seqs", "4")], vec![point(1, 80.0, 50.0, 25.0), point(2, 200.0, 40.0, 30.0)]),
                config("seqs=2", &[("seqs", "2")], vec![point(1, 90.0, 45.0, 20.0), point(2, 150.0, 40.0, 30.0)]),
                config("seqs=16", &[("seqs", "16")], vec![point(1, 90.0, 45.0, 20.0)]),
                config("odd", &[("temperature", "0")], vec![point(1, 90.0, 45.0, 20.0)]),
            ],
        );
        let c = compare_frontiers(("plan.json", pred), ("frontier.json", meas));
        assert_eq!(c.pairs.len(), 2);
        let p = &c.pairs[0];
        assert_eq!((p.measured.as_str(), p.predicted.as_str()), ("seqs=4", "p4"));
        // At 1 user: read at the predicted point; 100 against 80 is +25%.
        let v = &p.points[0].figures[0];
        assert!(!p.points[0].interpolated);
        assert_eq!((v.predicted, v.measured), (Some(100.0), Some(80.0)));
        assert!((v.error.unwrap() - 0.25).abs() < 1e-12);
        // At 2 users: a third of the way from 1 to 4 users, 100 → 300.
        assert!(p.points[1].interpolated);
        let v = &p.points[1].figures[0];
        assert!((v.predicted.unwrap() - (100.0 + 200.0 / 3.0)).abs() < 1e-9);
        // The median of |+25%| and |(166.7-200)/200|.
        let want = (0.25 + (200.0 - (100.0 + 200.0 / 3.0)) / 200.0) / 2.0;
        assert!((p.summary[0].median_abs_error.unwrap() - want).abs() < 1e-9);
        // seqs=2 takes p4's first point and its interpolation stops at 2 users: 2 is outside.
        let q = &c.pairs[1];
        assert_eq!(q.predicted, "p2");
        assert_eq!(q.points.len(), 1);
        assert_eq!(q.uncompared.len(), 1);
        assert!(q.uncompared[0].reason.contains("outside"), "{}", q.uncompared[0].reason);
        // On one side only: seqs=16 and odd measured, p8 predicted.
        let one: Vec<(&str, &str)> = c.unmatched.iter().map(|u| (u.source.as_str(), u.config.as_str())).collect();
        assert_eq!(one, [("measured", "seqs=16"), ("measured", "odd"), ("predicted", "p8")]);
        assert!(c.unmatched[0].reason.contains("max_num_seqs=16"), "{}", c.unmatched[0].reason);
        assert!(c.unmatched[1].reason.contains("maps onto"), "{}", c.unmatched[1].reason);
        assert_eq!(c.overall[0].points, 3);
        // No word of calibration where the prediction ran calibrated GPUs alone.
        assert!(!c.notes.iter().any(|n| n.contains("uncalibrated")), "{:?}", c.notes);
    }

    /// The prediction's best is checked against the measured one: agreed,
    /// beaten (by how much), missing the SLO at every load, or not measured.
    #[test]
    fn the_predictions_choice_is_checked_against_the_measured_best() {
        let pred = || {
            doc(
                FrontierSource::Predicted,
                vec![
                    planned("p4", "4", vec![point(1, 100.0, 50.0, 20.0), point(4, 300.0, 40.0, 40.0)]),
                    planned("p8", "8", vec![point(1, 100.0, 50.0, 20.0), point(8, 250.0, 30.0, 50.0)]),
                ],
            )
        };
        assert_eq!(pred().configs[pred().best.unwrap().at.config].id, "p4");
        let measured = |seqs8: f64| {
            doc(
                FrontierSource::Measured,
                vec![
                    config("seqs=4", &[("seqs", "4")], vec![point(1, 80.0, 50.0, 25.0), point(4, 280.0, 40.0, 45.0)]),
                    config("seqs=8", &[("seqs", "8")], vec![point(8, seqs8, 30.0, 60.0)]),
                ],
            )
        };
        let check = |meas: FrontierResult| compare_frontiers(("plan.json", pred()), ("f.json", meas)).choice.unwrap();
        let agreed = check(measured(200.0));
        assert_eq!(agreed.agrees, Some(true));
        assert_eq!(
            (agreed.measured_partner.as_deref(), agreed.ranked_by.as_str()),
            (Some("seqs=4"), "good_tokens_per_s_per_gpu")
        );
        assert_eq!(
            agreed.verdict,
            "the measurement agrees: seqs=4, the prediction's best (p4), is the measured best too (280 output \
             tokens/s per GPU)"
        );
        let beaten = check(measured(350.0));
        assert_eq!((beaten.agrees, beaten.measured_best.as_deref()), (Some(false), Some("seqs=8")));
        assert_eq!((beaten.partner_value, beaten.measured_best_value), (Some(280.0), Some(350.0)));
        assert!(
            beaten.verdict.ends_with("seqs=4, the prediction's best (p4), gave 280 (-20% against the measured best)"),
            "{}",
            beaten.verdict
        );
        // Judged by an SLO its choice missed at every load.
        let mut missed = measured(200.0);
        missed.slo = Some("tpot:p50<=20ms".into());
        for p in &mut missed.configs[0].points {
            p.meets_slo = Some(false);
        }
        analyze_frontier(&mut missed);
        let missed = check(missed);
        assert_eq!((missed.agrees, missed.partner_value), (Some(false), None));
        assert!(
            missed
                .verdict
                .contains("met the SLO at no load; the measured best is seqs=8 (200 good output tokens/s per GPU)"),
            "{}",
            missed.verdict
        );
        // Its configuration never measured.
        let mut other = measured(200.0);
        other.configs.remove(0);
        analyze_frontier(&mut other);
        let unmeasured = check(other);
        assert_eq!((unmeasured.agrees, unmeasured.measured_partner), (None, None));
        assert!(
            unmeasured.verdict.starts_with("the prediction's best, p4, was not measured"),
            "{}",
            unmeasured.verdict
        );
    }

    /// A prediction that ran a GPU of an uncalibrated family says so in the
    /// comparison: its errors there are not the engine's calibrated ones.
    #[test]
    fn a_prediction_on_an_uncalibrated_gpu_is_said() {
        let mut pred = doc(FrontierSource::Predicted, vec![planned("p4", "4", vec![point(1, 100.0, 50.0, 20.0)])]);
        pred.uncalibrated_gpus = vec!["MI300X".into()];
        let meas =
            doc(FrontierSource::Measured, vec![config("seqs=4", &[("seqs", "4")], vec![point(1, 80.0, 50.0, 25.0)])]);
        let c = compare_frontiers(("plan.json", pred), ("frontier.json", meas));
        let said: Vec<&String> = c.notes.iter().filter(|n| n.contains("uncalibrated")).collect();
        assert_eq!(said.len(), 1, "{:?}", c.notes);
        assert!(said[0].starts_with("the prediction ran MI300X on another family's constants"), "{}", said[0]);
    }

    /// Frontiers of different sessions (or one of single requests) say so:
    /// a count of users is not the same load.
    #[test]
    fn frontiers_of_other_sessions_are_said() {
        let sessions =
            |turns: &str| Some(crate::doc::config::SessionsConfig { turns: turns.into(), think_time: "2s".into() });
        let run = |p: Option<crate::doc::config::SessionsConfig>, m: Option<crate::doc::config::SessionsConfig>| {
            let mut pred = doc(FrontierSource::Predicted, vec![planned("p4", "4", vec![point(1, 100.0, 50.0, 20.0)])]);
            let mut meas = doc(
                FrontierSource::Measured,
                vec![config("seqs=4", &[("seqs", "4")], vec![point(1, 80.0, 50.0, 25.0)])],
            );
            (pred.sessions, meas.sessions) = (p, m);
            compare_frontiers(("plan.json", pred), ("frontier.json", meas)).notes
        };
        let said = |notes: Vec<String>| notes.into_iter().filter(|n| n.contains("users sent")).collect::<Vec<_>>();
        assert!(said(run(None, None)).is_empty());
        assert!(said(run(sessions("3"), sessions("3"))).is_empty());
        assert_eq!(
            said(run(sessions("3"), None)),
            ["the prediction's users sent sessions of --turns 3 with --think-time 2s and the measurement's single \
              requests: a load of as many users is not the same load"]
        );
        assert_eq!(said(run(sessions("3"), sessions("5"))).len(), 1);
    }

    #[test]
    fn several_candidates_are_named_not_guessed() {
        let mut tp2 = planned("tp2", "4", vec![point(1, 100.0, 60.0, 10.0)]);
        tp2.params.insert("tp".into(), "2".into());
        tp2.gpus = 2;
        tp2.params.insert("dp".into(), "1".into());
        let mut tp2b = tp2.clone();
        tp2b.id = "tp2 fp8".into();
        tp2b.params.insert("precision".into(), "fp8".into());
        let pred = doc(FrontierSource::Predicted, vec![tp2, tp2b]);
        let mut m = config("seqs=4", &[("max_num_seqs", "4")], vec![point(1, 90.0, 50.0, 12.0)]);
        m.gpus = 2;
        let meas = doc(FrontierSource::Measured, vec![m]);
        let c = compare_frontiers(("a", pred), ("b", meas));
        assert!(c.pairs.is_empty());
        let r = &c.unmatched[0].reason;
        assert!(r.contains("matches 2 predicted configurations") && r.contains("precision"), "{r}");
    }
}
