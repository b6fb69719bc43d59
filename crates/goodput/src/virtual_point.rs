//! A point run in virtual time: the simulated engine driven by a load plan
//! on a simulated clock, giving the same records and result document a live
//! run over HTTP would, plus the engine's own view. What `estimate` runs
//! once and `sweep --estimate` runs per point, as `point` is for live runs.

use crate::cli::{EngineArgs, EngineHwArgs};
use crate::common;
use crate::setup;
use anyhow::{anyhow, bail, Context, Result};
use goodput_core::analysis::assemble::{assemble, attach_server_side, Assembly, ServerSide};
use goodput_core::analysis::energy::{EnergyReport, EnergySource};
use goodput_core::doc::config::WorkloadConfig;
use goodput_core::doc::engine::{EngineSeries, ReplicaShare, SimulatedEngine};
use goodput_core::load::dispatch::Dispatcher;
use goodput_core::{AnalysisOptions, RequestRecord, RunConfig, RunResult, SessionTurn, Target};
use goodput_load::{LengthDist, LoadPlan, Workload};
use goodput_sim::engine::{
    simulate_until, Disaggregation, EngineConfig, EngineView, GpuSpec, KvCacheDtype, LoadBalance, ModelSpec, Precision,
    PromptKind, RouterPolicy, SchedulerPolicy, SharedPrefix, SimRun, VirtualLoad, VirtualRequest, VirtualTurn,
};
use goodput_sim::template::ChatTemplate;
use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

/// The model `--model` names: a catalog name, a Hugging Face config.json,
/// or the folder that holds one (a downloaded model's).
pub fn model_spec(model: &str) -> Result<ModelSpec> {
    let path = Path::new(model);
    if path.is_dir() {
        let config = path.join("config.json");
        if config.is_dir() {
            bail!(
                "--model {model}: its config.json is itself a folder, not the model's config file: give the path \
                 of the model's config.json"
            );
        }
        if !config.is_file() {
            if config.symlink_metadata().is_ok() {
                bail!(
                    "--model {model}: its config.json is a symbolic link that leads to no file (a loop of links, or \
                     a missing target): give the path of the model's config.json"
                );
            }
            bail!("--model {model} is a folder with no config.json in it: give the path of the model's config.json");
        }
        return Ok(ModelSpec::from_hf_config(&config)?);
    }
    // A link that leads nowhere (a loop, a missing target): named so, not looked up as a catalog name.
    if std::fs::metadata(path).is_err() && std::fs::symlink_metadata(path).is_ok() {
        bail!(
            "--model {model} is a symbolic link that leads to no file (a loop of links, or a missing target): give \
             a catalog name, a model's config.json, or the folder that holds it"
        );
    }
    // Any other thing that is there (a device, a pipe) is read as a file, which names what it is.
    Ok(if model.ends_with(".json") || path.exists() {
        ModelSpec::from_hf_config(path)?
    } else {
        ModelSpec::lookup(model)?
    })
}

/// `--precision`: a width, or `auto`, the checkpoint's
/// ([`ModelSpec::checkpoint_precision`]: a config.json's
/// `quantization_config`, DeepSeek-V3's FP8) and 16-bit where it names
/// none. An FP8 checkpoint stays FP8 on a GPU without FP8 cores: the
/// engine runs it as the scheduler's server does there
/// ([`SchedulerPolicy::compute_precision`]: weight-only under vLLM and
/// SGLang, refused under TensorRT-LLM, [`refuse_auto_fp8`]). An NVFP4
/// checkpoint where FP4 cores are not runs as vLLM runs it, its 4-bit
/// weights alone (FP4 Marlin): INT4's bytes and rate.
pub fn resolve_precision(flag: &str, model: &ModelSpec, gpu: &GpuSpec) -> Result<Precision> {
    if !flag.trim().eq_ignore_ascii_case("auto") {
        return Ok(flag.parse()?);
    }
    Ok(match model.checkpoint_precision {
        None => Precision::Bf16,
        Some(p) if gpu.peak_flops(p).is_ok() => p,
        Some(Precision::Fp4) => Precision::Int4,
        Some(p) => p,
    })
}

/// `--precision auto` with an FP8 checkpoint the scheduler cannot run on
/// the GPU ([`SchedulerPolicy::compute_precision`] leaves it FP8 where the
/// cores lack FP8: TensorRT-LLM's): the refusal names the checkpoint
/// rather than a `--precision fp8` that was not typed.
fn refuse_auto_fp8(flag: &str, cfg: &EngineConfig) -> Result<()> {
    let auto = flag.trim().eq_ignore_ascii_case("auto");
    if auto && cfg.precision == Precision::Fp8 && cfg.gpu.peak_flops(cfg.compute_precision()).is_err() {
        bail!(
            "--precision auto: {}'s checkpoint is FP8, which TensorRT-LLM runs only on GPUs with FP8 tensor cores, and \
             {} has none: pass --precision int8 (weight-only) or bf16, or --scheduler vllm or sglang, which run FP8 \
             weights there as weight-only FP8 (W8A16)",
            cfg.model.name,
            cfg.gpu.name
        );
    }
    Ok(())
}

/// What a width runs as where the GPU's cores lack it, said beside an
/// estimate and a plan: FP8 on a GPU without FP8 cores under vLLM's or
/// SGLang's scheduler, the GPU named `label`. `None` where the width runs
/// as itself.
pub fn weight_only_note(
    scheduler: SchedulerPolicy,
    precision: Precision,
    gpu: &GpuSpec,
    label: &str,
    verb: &str,
) -> Option<String> {
    (scheduler.compute_precision(precision, gpu) != precision).then(|| {
        let who = if scheduler == SchedulerPolicy::Sglang { "SGLang" } else { "vLLM" };
        format!(
            "{precision} on {label}: {verb} as {who} runs it there, weight-only (W8A16, its FP8 Marlin kernels): \
             1-byte weights, 16-bit products"
        )
    })
}

/// The notes `estimate` and `sweep --estimate` give on the width and the
/// memory: a `quantization_config` not modelled, FP8 run weight-only, and
/// the memory share SGLang sets itself.
pub fn setup_notes(flag: &str, cfg: &EngineConfig) -> Vec<String> {
    let weight_only =
        weight_only_note(cfg.scheduler, cfg.precision, &cfg.gpu, &cfg.gpu.name, "run").map(|n| format!("note: {n}"));
    quantization_note(flag, &cfg.model).into_iter().chain(weight_only).chain(sglang_share_note(cfg)).collect()
}

/// Under SGLang's scheduler with no `--gpu-memory-utilization` given, the
/// share SGLang's own `--mem-fraction-static` default takes (a
/// disaggregated configuration's, each pool's), so that a server's log can
/// be held beside it.
pub fn sglang_share_note(cfg: &EngineConfig) -> Option<String> {
    if cfg.scheduler != SchedulerPolicy::Sglang || cfg.gpu_memory_utilization.is_some() {
        return None;
    }
    let share = match cfg.pd {
        Some(_) => format!(
            "{} on its prefill instances and {} on its decode ones",
            cfg.pool(false).memory_share(),
            cfg.pool(true).memory_share()
        ),
        None => cfg.memory_share().to_string(),
    };
    let chunk = if cfg.enable_chunked_prefill {
        format!("--chunked-prefill-size {}", cfg.max_num_batched_tokens)
    } else {
        "chunking off".to_string()
    };
    Some(format!(
        "note: memory share {share}: SGLang's own --mem-fraction-static default for {} at --tp-size {} and \
         {chunk} (its activations and CUDA graphs outside it, the weights and KV cache inside); give \
         --gpu-memory-utilization to set another",
        cfg.gpu.name,
        cfg.tp.saturating_mul(cfg.attention_ranks())
    ))
}

/// A note where `--precision auto` meets a `quantization_config` whose
/// scheme is not modelled (bitsandbytes, mixed schemes): the
/// weights run at 16 bits, which the checkpoint's are not.
pub fn quantization_note(flag: &str, model: &ModelSpec) -> Option<String> {
    let q = model.unmodelled_quantization.as_ref()?;
    flag.trim().eq_ignore_ascii_case("auto").then(|| {
        format!(
            "note: {}'s quantization_config {q} is not modelled: running 16-bit weights; pass --precision with the \
             width nearest the checkpoint's (int4, int8, fp8, fp4)",
            model.name
        )
    })
}

/// `--spec-acceptance` and `--spec-draft-cost` where not given.
const SPEC_ACCEPTANCE: f64 = 0.7;
const SPEC_DRAFT_COST: f64 = 0.05;

/// Speculative decoding of `tokens` drafts a step at the given
/// `--spec-acceptance` and `--spec-draft-cost`, or their defaults: as
/// `estimate`, `sweep --estimate` and `plan` each set it.
pub(crate) fn spec_decoding(
    tokens: u32,
    acceptance: Option<f64>,
    draft_cost: Option<f64>,
) -> goodput_sim::engine::SpecDecoding {
    goodput_sim::engine::SpecDecoding {
        tokens,
        acceptance: acceptance.unwrap_or(SPEC_ACCEPTANCE),
        draft_cost: draft_cost.unwrap_or(SPEC_DRAFT_COST),
    }
}

/// The engine configuration the flags describe: the model (a catalog name
/// or a Hugging Face config.json) on the hardware and limits of `hw`, the
/// calibration file overlaid, checked and sized.
impl TryFrom<&EngineArgs> for EngineConfig {
    type Error = anyhow::Error;

    fn try_from(a: &EngineArgs) -> Result<EngineConfig> {
        let (model, e) = (&a.engine_model, &a.hw);
        let model = model_spec(model)?;
        // `h100=2.5`, as plan takes an offer: the price has its own flag here.
        if let Some((name, price)) = e.gpu.split_once('=').filter(|(n, _)| GpuSpec::lookup(n).is_ok()) {
            // The price as a number where it reads as one (a decimal comma
            // made a point), else a placeholder.
            let price = price.trim().trim_start_matches('$').replacen(',', ".", 1);
            let price = if price.parse::<f64>().is_ok_and(|v| v > 0.0) { price } else { "PRICE".into() };
            bail!(
                "--gpu {}: --gpu takes a GPU alone here (--gpu {name}); a price per GPU-hour is --gpu-hour-usd {price} \
                 on estimate, sweep and bench (plan alone takes --gpu NAME=PRICE)",
                e.gpu
            );
        }
        let gpu = GpuSpec::lookup(&e.gpu)?;
        let precision = resolve_precision(&e.precision, &model, &gpu)?;
        let mut cfg = EngineConfig::new(model, gpu, precision);
        cfg.kv_cache_dtype = e.kv_cache_dtype.parse::<KvCacheDtype>()?;
        cfg.tp = e.tp;
        cfg.dp = e.dp;
        cfg.ep = e.ep;
        cfg.pp = e.pp;
        cfg.router = e.router.parse()?;
        cfg.router_poll_s = e.router_poll.map(|d| d.as_secs_f64());
        // A router choice with one replica routes nothing.
        if e.dp <= 1 && e.pd.is_none() && cfg.router != RouterPolicy::default() {
            bail!("--router {} picks among --dp replicas, and there is one: add --dp N, or drop --router", e.router);
        }
        cfg.gpu_memory_utilization = e.gpu_memory_utilization;
        cfg.max_num_seqs = e.max_num_seqs;
        cfg.block_size = e.block_size;
        cfg.enable_chunked_prefill = !e.no_chunked_prefill;
        cfg.enable_prefix_caching = !e.no_prefix_caching;
        cfg.mixed_batches = !e.no_mixed_batches;
        cfg.scheduler = e.scheduler.parse()?;
        // A step ahead where the servers run one by default, unless told.
        cfg.async_scheduling = e.async_scheduling || (!e.no_async_scheduling && cfg.servers_schedule_ahead());
        refuse_auto_fp8(&e.precision, &cfg)?;
        if e.schedule_conservativeness != 1.0 && cfg.scheduler != goodput_sim::engine::SchedulerPolicy::Sglang {
            bail!(
                "--schedule-conservativeness is SGLang's, and the scheduler is {}: add --scheduler sglang, or drop it",
                cfg.scheduler
            );
        }
        cfg.schedule_conservativeness = e.schedule_conservativeness;
        cfg.scheduler_recv_interval = e.scheduler_recv_interval;
        cfg.max_prefill_tokens = e.max_prefill_tokens;
        cfg.batch_wait_timeout_iters = e.batch_wait_timeout_iters;
        cfg.batch_wait_max_tokens_ratio = e.batch_wait_max_tokens_ratio;
        cfg.mxfp4_activations = e
            .mxfp4_activations
            .as_deref()
            .map(str::parse::<goodput_sim::engine::Mxfp4Activations>)
            .transpose()
            .map_err(|m| anyhow::anyhow!("--mxfp4-activations: {m}"))?;
        (cfg.load_balance, cfg.decode_load_balance) = LoadBalance::parse_pools(&e.load_balance_method)?;
        cfg.internal_lb = e.internal_lb;
        cfg.api_server_count = e.api_server_count;
        cfg.max_num_batched_tokens = step_budget(&cfg, e.max_num_batched_tokens)?;
        if e.spec_tokens == 0 && (e.spec_acceptance.is_some() || e.spec_draft_cost.is_some()) {
            bail!(
                "--spec-acceptance and --spec-draft-cost describe speculative decoding, which --spec-tokens N turns \
                 on: add --spec-tokens, or drop them"
            );
        }
        cfg.spec = (e.spec_tokens > 0).then(|| spec_decoding(e.spec_tokens, e.spec_acceptance, e.spec_draft_cost));
        cfg.pd = match &e.pd {
            Some(text) => Some(goodput_sim::engine::Disaggregation {
                link_gbps: e.kv_link_gbps,
                link_latency_us: e.kv_link_latency_us,
                ..goodput_sim::engine::Disaggregation::parse(text).map_err(|m| anyhow!(m))?
            }),
            None if e.kv_link_gbps.is_some() || e.kv_link_latency_us.is_some() => {
                bail!("--kv-link-gbps and --kv-link-latency-us set the link of --pd: add --pd P:D, or drop them")
            }
            None => None,
        };
        if let Some(pd) = cfg.pd.filter(|pd| pd.names_sizes()) {
            // A pool's own TP or EP (`--pd 4xTP1:1xTP4`), checked as given
            // (so a refusal names what was typed), then kept as the engine
            // keeps it: the prefill pool's are --tp and --ep.
            cfg.validate()?;
            let (tp, ep, pd) = pd.canonical(cfg.tp, cfg.ep);
            (cfg.tp, cfg.ep, cfg.pd) = (tp, ep, Some(pd));
        }
        cfg.chat_template = ChatTemplate::parse(&e.chat_template, cfg.model.chat_template())
            .map_err(|m| anyhow!("--chat-template: {m}"))?;
        if let Some(p) = &e.calibration {
            let text =
                goodput_core::util::input::read_text(p, "--calibration", goodput_core::util::input::SETTINGS_CAP)?;
            cfg.calibration = cfg
                .calibration
                .overlay_json_for(cfg.gpu.family, &text)
                .with_context(|| format!("calibration {}", p.display()))?;
        }
        cfg.validate()?;
        // Nor does one among --dp ranks that an expert-parallel group makes
        // one engine (checked once the ranks are known to fill whole groups).
        if cfg.pd.is_none() && cfg.router != RouterPolicy::default() && cfg.engines() <= 1 {
            bail!(
                "--router {} picks among engines, and --ep {} over --tp {} makes the --dp {} ranks one \
                 expert-parallel engine: give --dp a multiple of {} for several (--dp {} for two), or drop --router",
                e.router,
                cfg.ep,
                cfg.tp,
                cfg.dp,
                cfg.attention_ranks(),
                2 * cfg.attention_ranks()
            );
        }
        goodput_sim::engine::kv_capacity(&cfg)?;
        if let Some(pd) = cfg.pd.filter(|pd| pd.names_sizes()) {
            goodput_sim::engine::kv_capacity(&cfg.pool(true)).with_context(|| {
                format!(
                    "--pd {}: the decode pool, on TP {}",
                    e.pd.as_deref().unwrap_or_default(),
                    pd.decode_tp.unwrap_or(cfg.tp)
                )
            })?;
        }
        Ok(cfg)
    }
}

/// What a simulated engine on `gpu` should say of its family's constants:
/// the accuracy note of an uncalibrated family (it runs on another's), what
/// a calibrated one's check leaves out (CDNA3's), or, where `--calibration`
/// gives the family constants of its own by name (as `estimate --fit`
/// writes from a user's measurements), that it runs on those; `None` for a
/// calibrated family the file does not name and whose check is whole.
pub fn family_note(gpu: &GpuSpec, calibration: Option<&std::path::Path>) -> Option<String> {
    if named_families(calibration).contains(&gpu.family) {
        let file = calibration.map(|p| p.display().to_string()).unwrap_or_default();
        return Some(format!(
            "{} ({}) runs on the constants --calibration {file} gives its family, in place of the shipped ones",
            gpu.name, gpu.family
        ));
    }
    goodput_sim::engine::accuracy::gpu_note(gpu)
}

/// The GPU families a `--calibration` file gives constants of their own by
/// name; none for a file of constants for every GPU, or none given.
pub fn named_families(calibration: Option<&std::path::Path>) -> Vec<goodput_sim::engine::GpuFamily> {
    let text = calibration.and_then(|p| {
        goodput_core::util::input::read_text(p, "--calibration", goodput_core::util::input::SETTINGS_CAP).ok()
    });
    text.map_or_else(Vec::new, |t| goodput_sim::engine::Calibration::named_families(&t))
}

/// Refuses a `--tp` (`--ep`) typed beside a `--pd` that names both pools'
/// tensor (expert) parallelism: each pool runs on its own size, and the
/// flag would set nothing. `tp_typed` and `ep_typed`: whether the flags
/// were typed (their defaults name nothing). A `--pd` that does not parse
/// is left to [`EngineConfig::try_from`]'s own refusal.
pub fn refuse_unused_sizes(hw: &EngineHwArgs, tp_typed: bool, ep_typed: bool) -> Result<()> {
    let Some(text) = hw.pd.as_deref() else { return Ok(()) };
    let Ok(pd) = Disaggregation::parse(text) else { return Ok(()) };
    if tp_typed && pd.prefill_tp.is_some() && pd.decode_tp.is_some() {
        bail!("--pd {text} names both pools' tensor parallelism, so --tp {} sets nothing: drop --tp", hw.tp);
    }
    if ep_typed && pd.prefill_ep.is_some() && pd.decode_ep.is_some() {
        bail!("--pd {text} names both pools' expert parallelism, so --ep {} sets nothing: drop --ep", hw.ep);
    }
    Ok(())
}

/// Refuses, before a run, a workload whose typical request (as its flags
/// give it: the median of a length distribution, a trace's longest request)
/// `cfg`'s model cannot hold, in the engine's own words: the engine refuses
/// every such request. The prompt counts what `prompts` adds to a first
/// turn's (the chat template, a raw prompt's BOS), as the engine counts it;
/// `other` says how to pick another model. A distribution whose tail alone
/// passes the context runs: the engine answers those requests as a server
/// does, with a 400 (counted failed), and [`context_tail_warning`] says so.
pub fn check_context(cfg: &EngineConfig, workload: &Workload, prompts: PromptKind, other: &str) -> Result<()> {
    check_context_of(cfg, workload, prompts, other, true)
}

/// [`check_context`], for a command that takes `--chat-template` or not
/// (`plan` does not: its fix names `--api completions` alone).
pub fn check_context_of(
    cfg: &EngineConfig,
    workload: &Workload,
    prompts: PromptKind,
    other: &str,
    chat_template_flag: bool,
) -> Result<()> {
    let Some((input, output, flags)) = typical_request(workload) else { return Ok(()) };
    let extra = u64::from(prompts.first_turn_extra(cfg.chat_template));
    cfg.model.check_context(input + extra, output).map_err(|m| {
        let added = match prompts {
            _ if extra == 0 => String::new(),
            PromptKind::Chat => format!(
                "; the prompt counts the {extra} tokens the {} chat template adds ({} leaves them out)",
                cfg.chat_template.name(),
                if chat_template_flag { "--chat-template none, or --api completions," } else { "--api completions" }
            ),
            _ => format!("; the prompt counts the {extra} token(s) of the model's BOS"),
        };
        anyhow!("{flags}: {m}{added} ({other})")
    })
}

/// A warning, before a run, where a share of the requests a synthetic
/// workload draws (its lengths' tail) passes `cfg`'s model's context: each
/// such request is answered 400 and counted failed, and the run goes on.
pub fn context_tail_warning(cfg: &EngineConfig, workload: &Workload, prompts: PromptKind) -> Option<String> {
    let (input, output, prefix) = match workload {
        Workload::Synthetic { input, output, shared_prefix, .. } => {
            (input, output, shared_prefix.map_or(0, |p| p.tokens))
        }
        Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => {
            return context_tail_warning(cfg, inner, prompts)
        }
        _ => return None,
    };
    let extra = u64::from(prompts.first_turn_extra(cfg.chat_template)) + u64::from(prefix);
    let share = goodput_load::workload::share_past(input, extra, output, u64::from(cfg.model.max_context));
    (share > 0.0).then(|| {
        let unbounded = |d: &LengthDist| matches!(d, LengthDist::Normal { .. } | LengthDist::LogNormal { .. });
        let which = if unbounded(input) || unbounded(output) {
            "a smaller sigma (or std), or bounded lengths (uniform:LO..HI),"
        } else {
            "shorter lengths"
        };
        format!(
            "warning: about {:.1} % of the requests --input-tokens {input} and --output-tokens {output} draw pass \
             {}'s context of {} tokens: the engine answers each with HTTP 400, as a server does, and the run \
             counts it failed; {which} keeps them within it",
            (share * 100.0).max(0.1),
            cfg.model.name,
            cfg.model.max_context
        )
    })
}

/// A warning, before a run, where a multi-turn session's history (each
/// turn sends every earlier question and answer again) outgrows `cfg`'s
/// model's context within the turns asked: from that turn on each request
/// is answered 400 and its session counted failed. Synthetic questions, at
/// their distributions' means; the most turns a session may draw.
pub fn session_context_warning(cfg: &EngineConfig, workload: &Workload, plan: &LoadPlan) -> Option<String> {
    use goodput_load::workload::Turns;
    let sessions = plan.sessions.as_ref()?;
    let Workload::Synthetic { input, output, shared_prefix, .. } = workload else { return None };
    let most = match &sessions.turns {
        Turns::Drawn(LengthDist::Fixed(k)) => u64::from(*k),
        Turns::Drawn(LengthDist::Uniform { hi, .. }) => u64::from(*hi),
        Turns::Drawn(d) => d.mean().ceil() as u64,
        Turns::All => return None,
    };
    let per_turn = input.mean() + output.mean();
    let prefix = shared_prefix.map_or(0.0, |p| f64::from(p.tokens));
    let context = f64::from(cfg.model.max_context);
    // Turn t (from 1) sends t questions and t − 1 answers, and asks for one more answer.
    let first_past = (1..=most).find(|&t| prefix + t as f64 * per_turn > context)?;
    Some(format!(
        "warning: a session's history grows by about {} tokens a turn (--input-tokens {input} and --output-tokens \
         {output}, each turn sending every earlier question and answer again), so from turn {first_past} of the up to \
         {most} of --turns {} its requests pass {}'s context of {} tokens: each is answered with HTTP 400 and its \
         session counted failed; fewer turns or shorter lengths keep within it",
        per_turn.round(),
        sessions.turns,
        cfg.model.name,
        cfg.model.max_context
    ))
}

/// Warnings, before a run, for a synthetic workload's length distributions
/// whose draws' mean clamping moves more than 5 % from the mean asked for,
/// and the refusal of one whose draws are mostly held at 1 token: the
/// check bench and estimate make ([`crate::setup::length_checks`]), so
/// sweep and plan judge a spec as they do.
pub fn clamp_warnings(workload: &Workload) -> anyhow::Result<Vec<String>> {
    crate::setup::length_checks(workload)
}

/// A workload's typical request: prompt and output tokens (a length
/// distribution's median; a trace's longest request, which it sends as
/// given), and the flags or file it comes from; `None` for a dataset, whose
/// prompts are their own.
pub(crate) fn typical_request(w: &Workload) -> Option<(u64, u64, String)> {
    match w {
        Workload::Synthetic { input, output, shared_prefix, .. } => {
            let prefix = shared_prefix.map_or(0, |p| p.tokens);
            let with = if prefix > 0 { format!(" with --shared-prefix-tokens {prefix}") } else { String::new() };
            let median = |d: &LengthDist| match d {
                LengthDist::Fixed(_) => String::new(),
                _ => " (their median draws)".to_string(),
            };
            let flags = format!(
                "--input-tokens {input}{with} and --output-tokens {output}{}",
                if median(input).is_empty() { median(output) } else { median(input) }
            );
            Some((u64::from(input.median()) + u64::from(prefix), output.median().into(), flags))
        }
        Workload::Trace { entries, .. } => entries
            .iter()
            .map(|e| (u64::from(e.lengths.input), u64::from(e.lengths.output)))
            .max_by_key(|(i, o)| i + o)
            .map(|(i, o)| (i, o, "the trace's longest request".into())),
        Workload::Dataset { .. } => None,
        Workload::Repeated { inner, .. } | Workload::WithImages { inner, .. } => typical_request(inner),
    }
}

/// The most requests (or sessions) one virtual run takes, checked before
/// their lengths are drawn: a virtual run holds every request's lengths and
/// record in memory (see [`VIRTUAL_MEMORY_LIMIT`]).
pub const MAX_VIRTUAL_UNITS: u64 = 2_000_000;

/// The memory a virtual run may hold, by the measured cost of its records:
/// about 3 KB a request and 24 bytes an output token (`/usr/bin/time` on
/// `estimate -n 200000 --output-tokens 16`, 610 MB, and `-n 20000
/// --output-tokens 1024`, 482 MB).
pub const VIRTUAL_MEMORY_LIMIT: u64 = 8 << 30;
const VIRTUAL_BYTES_PER_REQUEST: u64 = 3 << 10;
const VIRTUAL_BYTES_PER_OUTPUT_TOKEN: u64 = 24;

/// Why an estimate of `workload` cannot give its requests (or, with
/// `sessions`, its turns) their lengths: a dataset's entries that give no
/// output length, counted as bench's `--ignore-eos` refusal counts them, or
/// sessions over a dataset, each said apart (one message had lumped them,
/// and said "no answer" of entries whose answer column is for scoring).
fn lengths_refusal(workload: &Workload, sessions: bool) -> anyhow::Error {
    if sessions && workload.is_dataset() {
        return anyhow!(
            "estimate needs each turn's lengths, and a conversation of the --dataset gives no answer to one of its \
             questions (a later question whose answer the file lacks), or its entry asks in chat messages (sent \
             whole, as no session): add --output-tokens N (or a distribution such as uniform:64..512) to give every \
             turn an answer length, or drop --turns to estimate the entries as lone requests"
        );
    }
    match workload.entries_without_length() {
        Some((none, all)) => anyhow!(
            "estimate needs every request's output length, and {none} of the {all} entries of the --dataset give \
             none (no \"max_tokens\", no answer turn; a \"reference\" or \"answer\" column is what --score \
             compares with, not a length): add --output-tokens N (or a distribution such as uniform:64..512) to \
             give every request one"
        ),
        None => anyhow!("estimate needs every request's lengths, and this workload does not give them"),
    }
}

/// A request of `l`'s lengths, its prompt opening with `l`'s shared prefix.
pub fn virtual_request(l: &goodput_load::Lengths) -> VirtualRequest {
    VirtualRequest {
        shared_prefix: l.prefix.map(|(id, len)| SharedPrefix { id, len }),
        ..VirtualRequest::new(l.input, l.output)
    }
}

/// Session `s`'s turns as `workload` and `sessions` give them (its turn
/// count and think times from `seed`), one request after another: each
/// prompt the conversation so far (the questions and answers before it,
/// and its own question), each later turn its think time after the turn
/// before it ends, the first turn's shared prefix on every one, and the
/// prompt its conversation opens with (a dataset's entry: its second time
/// round opens as the first did). `Ok(None)` where a turn's lengths are not
/// known.
pub fn session_requests(
    sessions: &goodput_load::Sessions,
    seed: u64,
    s: u64,
    workload: &Workload,
) -> Result<Option<Vec<VirtualRequest>>, goodput_load::error::WorkloadError> {
    let (turns, think) = sessions.shape(seed, s, workload.conversation_turns(s))?;
    let (mut context, mut prefix, mut out) = (0u32, None, Vec::with_capacity(turns as usize));
    for t in 0..turns {
        let Some(l) = workload.question_lengths(s, t) else { return Ok(None) };
        if t == 0 {
            prefix = l.prefix.map(|(id, len)| SharedPrefix { id, len });
        }
        context = context.saturating_add(l.input);
        out.push(VirtualRequest {
            shared_prefix: prefix,
            prompt: workload.prompt_id(s),
            turn: Some(VirtualTurn {
                session: s,
                turn: t + 1,
                turns,
                think: t.checked_sub(1).map_or(Duration::ZERO, |k| think[k as usize]),
            }),
            ..VirtualRequest::new(context, l.output)
        });
        context = context.saturating_add(l.output);
    }
    Ok(Some(out))
}

/// The virtual load of a plan: the same request lengths, prefixes and
/// arrival times a `bench` with the same flags and seed would send. A closed
/// loop gets `timed_warmup` requests more for those a timed warm-up takes
/// (known only once simulated: see [`run_virtual`]).
pub fn virtual_load(
    plan: &LoadPlan,
    workload: &Workload,
    timed_warmup: u64,
    prompts: PromptKind,
    memory_limit: u64,
) -> Result<VirtualLoad> {
    // Given up on as bench gives up on them (the plan's `cancel`): a lone
    // request by its number, a session's turn by its session and turn.
    let give_up = |id: usize, turn: Option<SessionTurn>| {
        plan.cancel.filter(|c| c.picks_request(id as u64, turn)).map(|c| c.after)
    };
    if plan.rate.is_some() && plan.requests.is_none() && plan.duration.is_none() {
        bail!("the run has no end: give --requests N and/or --duration D");
    }
    // The load's rules, as bench applies them: the simulated run applies
    // them again; an open loop's arrivals and bounds say here how many
    // units to give lengths to.
    let rules = plan.dispatch_plan();
    let most = MAX_VIRTUAL_UNITS as usize + 1;
    let arrivals = plan.send_times()?.map(|sched| Dispatcher::uncapped_sends(&rules, sched, most));
    let n = match (&arrivals, plan.requests) {
        (Some(a), _) => a.len() as u64,
        (None, Some(n)) => n.saturating_add(plan.warmup).saturating_add(timed_warmup),
        (None, None) => bail!("a closed-loop estimate needs --requests N (a duration alone gives no request count)"),
    };
    if n > MAX_VIRTUAL_UNITS {
        let what = if plan.sessions.is_some() { "sessions" } else { "requests" };
        let fewer = if arrivals.is_some() { "fewer -n, a shorter --duration or a lower --rate" } else { "fewer -n" };
        bail!(
            "this estimate would take {} {what}{}, and a virtual run holds each in memory: it takes at most \
             {MAX_VIRTUAL_UNITS} (give {fewer}; a sample of a few thousand already gives the percentiles)",
            if arrivals.is_some() && n as usize == most { format!("over {MAX_VIRTUAL_UNITS}") } else { n.to_string() },
            match (plan.warmup > 0, timed_warmup > 0) {
                (_, true) => " with the warm-up its --ramp-up or timed --warmup takes",
                (true, false) => " with its warm-up",
                _ => "",
            },
        );
    }
    // With sessions, `n` and the arrivals count sessions: each expands into
    // its turns, whose prompts hold the conversation so far.
    let synthetic_only = || lengths_refusal(workload, false);
    let mut requests = Vec::with_capacity(n as usize);
    let mut sent_at = Vec::new();
    // A trace's prefix blocks (Mooncake's hash_ids), as bench's prompts open with them.
    let mut prefix_blocks = Vec::new();
    for i in 0..n {
        let at = arrivals.as_ref().map(|a| a[i as usize]);
        let Some(sessions) = &plan.sessions else {
            let l = workload.lengths(i).ok_or_else(synthetic_only)?;
            requests.push(VirtualRequest {
                give_up_after: give_up(requests.len(), None),
                // A dataset's entry sent again, or --repeat's copy.
                prompt: workload.prompt_id(i),
                ..virtual_request(&l)
            });
            if let Some(blocks) = workload.prefix_blocks(i) {
                prefix_blocks.resize(requests.len(), None);
                prefix_blocks[requests.len() - 1] = Some(goodput_load::trace::sized_blocks(&blocks, l.input).collect());
            }
            sent_at.extend(at);
            continue;
        };
        let turns =
            session_requests(sessions, plan.seed, i, workload)?.ok_or_else(|| lengths_refusal(workload, true))?;
        for r in turns {
            let t = r.turn.expect("a session's request is a turn");
            let give_up_after = give_up(requests.len(), Some(SessionTurn { id: i, turn: t.turn, turns: t.turns }));
            requests.push(VirtualRequest { give_up_after, ..r });
            // A later turn's arrival is its session's (it goes after the turn before it).
            sent_at.extend(at);
        }
    }
    let tokens: u64 = requests.iter().map(|r| u64::from(r.output_tokens)).sum();
    let bytes = VIRTUAL_BYTES_PER_REQUEST * requests.len() as u64 + VIRTUAL_BYTES_PER_OUTPUT_TOKEN * tokens;
    if bytes > memory_limit {
        let share = if memory_limit < VIRTUAL_MEMORY_LIMIT {
            format!(
                " (its share of {} GB, with other runs at once: fewer --jobs gives it more)",
                VIRTUAL_MEMORY_LIMIT >> 30
            )
        } else {
            String::new()
        };
        bail!(
            "this estimate would hold about {:.1} GB in memory ({} requests of {tokens} output tokens in all: \
             about 3 KB a request and 24 bytes a token), over a virtual run's {:.1} GB{share}: give fewer requests \
             or shorter answers (a sample of a few thousand requests already gives the percentiles)",
            bytes as f64 / 1e9,
            requests.len(),
            memory_limit as f64 / f64::from(1u32 << 30),
        );
    }
    Ok(VirtualLoad {
        requests,
        arrivals: arrivals.map(|_| sent_at),
        plan: rules,
        seed: plan.seed,
        prompts,
        prefix_blocks,
        ends_only: false,
    })
}

/// The engine's view, with its KV and queue series, as the result keeps it.
pub fn engine_view(cfg: &EngineConfig, v: &EngineView) -> SimulatedEngine {
    SimulatedEngine {
        config: cfg.into(),
        steps: v.steps,
        mean_batch_seqs: v.mean_batch_seqs,
        mean_batch_tokens: v.mean_batch_tokens,
        max_batch_seqs: v.max_batch_seqs,
        preemptions: v.preemptions,
        prefix_cache_queries_tokens: v.prefix_cache_queries,
        prefix_cache_hits_tokens: v.prefix_cache_hits,
        prefix_cache_hit_rate: v.prefix_cache_hit_rate,
        kv_capacity_tokens: v.kv_capacity_tokens,
        kv_rank_tokens: v.kv_rank_tokens,
        max_num_seqs: v.max_num_seqs,
        busy_s: v.busy.as_secs_f64(),
        makespan_s: v.makespan.as_secs_f64(),
        kv_usage_max: v.samples.iter().map(|s| s.kv_usage).fold(0.0, f64::max),
        kv_transfer_mean_s: (v.kv_transfers > 0).then(|| v.kv_transfer_s / v.kv_transfers as f64),
        spec_decode: goodput_core::doc::engine::EngineSpecDecode::of(
            v.spec_drafts,
            v.spec_draft_tokens,
            v.spec_accepted_tokens,
            &v.spec_accepted_by_position,
        ),
        frontend_busy_s: (!v.frontend_busy.is_zero()).then_some(v.frontend_busy.as_secs_f64()),
        series: EngineSeries {
            t_s: v.samples.iter().map(|s| s.t.as_secs_f64()).collect(),
            kv_usage: v.samples.iter().map(|s| s.kv_usage).collect(),
            running: v.samples.iter().map(|s| s.running).collect(),
            waiting: v.samples.iter().map(|s| s.waiting).collect(),
        },
        replicas: if v.replicas.len() > 1 {
            v.replicas
                .iter()
                .map(|r| ReplicaShare {
                    requests: r.requests,
                    prompt_tokens: r.prompt_tokens,
                    generation_tokens: r.generation_tokens,
                    preemptions: r.preemptions,
                    prefix_cache_hit_rate: r.prefix_cache_hit_rate,
                    busy_s: r.busy.as_secs_f64(),
                })
                .collect()
        } else {
            Vec::new()
        },
        notes: Vec::new(),
    }
}

/// Runs one plan in virtual time. A closed loop with a timed warm-up learns
/// how many requests the warm-up took only by simulating; it is simulated
/// again with that many more, so that `--requests` are measured after it
/// (requests added at the end leave the earlier ones' times as they were).
pub fn run_virtual(server: VirtualServer, plan: &LoadPlan, workload: &Workload) -> Result<SimRun> {
    run_virtual_until(server, plan, workload, None)
}

/// [`run_virtual`] with stopping rules, which may end it early.
pub fn run_virtual_until(
    server: VirtualServer,
    plan: &LoadPlan,
    workload: &Workload,
    until: Option<&crate::until::Spec>,
) -> Result<SimRun> {
    let mut timed_warmup = 0;
    let open_loop = plan.rate.is_some() || plan.trace.is_some();
    loop {
        let mut load = virtual_load(plan, workload, timed_warmup, server.prompts, server.memory_limit)?;
        load.ends_only = server.ends_only;
        let run = simulate_until(server.engine, &load, until.map(|u| u.watch_for(plan)))?;
        // The units (requests, or sessions) the timed warm-up took beyond
        // the counted warm-up.
        let warm: HashSet<u64> =
            run.records.iter().filter(|r| r.warmup).map(|r| r.session.map_or(r.id, |s| s.id)).collect();
        let more = (warm.len() as u64).saturating_sub(plan.warmup);
        if open_loop || !run.ran_out || more <= timed_warmup {
            return Ok(run);
        }
        // The requests ran out before the warm-up ended: the next run gets
        // at least twice as many, and as many as the warm-up would take at
        // this run's pace (its warm-up sends by the last one's time), so
        // that a long warm-up (a ramp-up of hours) takes a few runs, not
        // one per request, and the bound on a run's size refuses it early.
        // Requests past the warm-up's need are not sent: the load's rules
        // end the run at its count.
        let last = run.records.iter().map(|r| r.sent).max().unwrap_or_default().as_secs_f64();
        let pace = plan.warmup_time.as_secs_f64() / last.max(1e-9);
        let paced = (more as f64 * pace.clamp(2.0, 1e9)).ceil() as u64;
        timed_warmup = paced.max(timed_warmup.saturating_add(1));
    }
}

/// The step's token budget: `given`, or the default (vLLM's by GPU: 8,192
/// tokens on GPUs of 70 GiB or more but the A100, 2,048 on the others,
/// [`goodput_sim::engine::vllm_large_gpu`]; SGLang's `--chunked-prefill-size`
/// by GPU memory, [`goodput_sim::engine::sglang_default_chunk`]). vLLM without chunked
/// prefill takes a whole prompt in one step: it sets the budget to the
/// model's context (at least 2,048) when none is given, and refuses at
/// start one smaller than the context (every longer prompt would be
/// refused). With the budget left at its default, `--no-chunked-prefill` had
/// failed every prompt past 8,192 tokens, and a smaller one given had been
/// taken and failed its prompts one by one. TensorRT-LLM's scheduler keeps
/// the 8,192 of its `max_num_tokens`, and refuses a longer prompt without
/// chunked context per request, as TensorRT-LLM does.
fn step_budget(cfg: &EngineConfig, given: Option<u32>) -> Result<u32> {
    use goodput_sim::engine::SchedulerPolicy;
    // SGLang without chunks (`--chunked-prefill-size -1`) takes a prompt
    // of any length whole too.
    let whole_prompts = !cfg.enable_chunked_prefill && cfg.scheduler != SchedulerPolicy::Trtllm;
    let vllm_whole_prompts = whole_prompts && cfg.scheduler == SchedulerPolicy::Vllm;
    let context = cfg.model.max_context.max(2048);
    match given {
        Some(n) if vllm_whole_prompts && n < cfg.model.max_context => bail!(
            "--max-num-batched-tokens {n} is smaller than {}'s context ({} tokens) with chunked prefill off: vLLM \
             refuses this at start, as every prompt longer than the budget would be refused; leave it out (it is \
             then the context, as vLLM sets it), raise it to {}, or turn chunked prefill on",
            cfg.model.name,
            cfg.model.max_context,
            cfg.model.max_context
        ),
        Some(n) => Ok(n),
        None if whole_prompts => Ok(context),
        // vLLM's by GPU; TensorRT-LLM's max_num_tokens on every GPU.
        None if cfg.scheduler == SchedulerPolicy::Vllm => Ok(goodput_sim::engine::vllm_default_budget(&cfg.gpu)),
        None if cfg.scheduler == SchedulerPolicy::Sglang => Ok(goodput_sim::engine::sglang_default_chunk(&cfg.gpu)),
        None => Ok(goodput_sim::engine::DEFAULT_MAX_NUM_BATCHED_TOKENS),
    }
}

/// The power model's figures for a virtual run: its joules over the whole
/// simulated run and the tokens generated in it, the summary's output
/// tokens/s against TDP × the engine's GPUs.
pub fn energy_of(cfg: &EngineConfig, v: &EngineView, output_tokens_per_s: f64) -> EnergyReport {
    EnergyReport::new(
        EnergySource::Model,
        v.energy_j,
        v.makespan.as_secs_f64(),
        v.generation_tokens,
        Some(cfg.gpus()),
        Some(v.provisioned_w),
        output_tokens_per_s,
    )
}

pub fn target_of(cfg: &EngineConfig) -> Target {
    // Replicas × stages × TP (each left out at 1), pools for a disaggregated
    // engine, and the expert-parallel degree after the GPU where there is one
    // (each pool's, prefill's first, where they differ).
    let (dp, pp, tp) = (cfg.dp, cfg.pp, cfg.tp);
    let stages = if pp > 1 { format!("{pp}x") } else { String::new() };
    let layout = match cfg.pd {
        // Pools of their own TP: each pool's instances × its TP.
        Some(pd) if pd.split_tp(tp) => {
            format!("{}px{stages}{}+{}dx{stages}{}", pd.prefill, cfg.pool_tp(false), pd.decode, cfg.pool_tp(true))
        }
        Some(pd) => format!("{}p{}dx{stages}{tp}", pd.prefill, pd.decode),
        None if dp == 1 && pp == 1 => format!("{tp}"),
        None if pp == 1 => format!("{dp}x{tp}"),
        None => format!("{dp}x{pp}x{tp}"),
    };
    // Pools of their own EP: the prefill pool's, then the decode pool's.
    let ep = match cfg.pd {
        Some(pd) if pd.split_ep(cfg.ep) => format!("/ep{}+{}", cfg.pool_ep(false), cfg.pool_ep(true)),
        Some(_) if cfg.pool_ep(false) > 1 => format!("/ep{}", cfg.pool_ep(false)),
        _ if cfg.ep > 1 => format!("/ep{}", cfg.ep),
        _ => String::new(),
    };
    Target {
        url: format!("virtual://{}@{layout}x{}{ep}", cfg.model.name, cfg.gpu.name),
        model: cfg.model.name.clone(),
        api: "virtual".into(),
        embedded: true,
        server: Some("goodput-sim (virtual time)".into()),
    }
}

/// The simulated server a virtual run loads: its engine, and what its
/// requests' prompts become (the route's template or BOS).
#[derive(Debug, Clone, Copy)]
pub struct VirtualServer<'a> {
    pub engine: &'a EngineConfig,
    pub prompts: PromptKind,
    /// The memory one run may hold: [`VIRTUAL_MEMORY_LIMIT`], or its share
    /// when several runs go at once (`plan`'s jobs).
    pub memory_limit: u64,
    /// Records keep their first and last chunks only, the tokens' times
    /// kept apart ([`VirtualLoad::ends_only`]): for a caller that reads no
    /// ITL or chunk gap.
    pub ends_only: bool,
}

impl<'a> VirtualServer<'a> {
    /// A server whose runs go one at a time.
    pub fn new(engine: &'a EngineConfig, prompts: PromptKind) -> VirtualServer<'a> {
        VirtualServer { engine, prompts, memory_limit: VIRTUAL_MEMORY_LIMIT, ends_only: false }
    }
}

/// What a real server adds to the prompts of requests to `api`: the chat
/// routes' template, the raw routes' BOS.
pub fn prompt_kind(api: goodput_load::Api) -> PromptKind {
    use goodput_load::Api;
    match api {
        Api::Chat | Api::Messages | Api::OllamaChat | Api::OllamaGenerate => PromptKind::Chat,
        Api::Completions | Api::Tgi | Api::LlamaCpp | Api::Embeddings | Api::Rerank | Api::TeiRerank => PromptKind::Raw,
    }
}

/// One estimate as a result document.
pub fn estimate_result(
    server: VirtualServer,
    plan: &LoadPlan,
    workload: &Workload,
    workload_config: WorkloadConfig,
    opts: &AnalysisOptions,
    include_requests: bool,
) -> Result<(RunResult, Vec<RequestRecord>)> {
    estimate_result_until(server, plan, workload, workload_config, opts, include_requests, None)
}

/// [`estimate_result`] with stopping rules (`estimate --until`), which may
/// end the run early; its `stop` says why it stopped.
pub fn estimate_result_until(
    server: VirtualServer,
    plan: &LoadPlan,
    workload: &Workload,
    workload_config: WorkloadConfig,
    opts: &AnalysisOptions,
    include_requests: bool,
    until: Option<&crate::until::Spec>,
) -> Result<(RunResult, Vec<RequestRecord>)> {
    estimate_result_streamed(server, plan, workload, workload_config, opts, include_requests, until)
        .map(|(r, run)| (r, run.records))
}

/// [`estimate_result_until`] with the run it was made from: with
/// `server.ends_only`, its `streamed` tokens' times stand for the chunks
/// the records no longer keep.
pub fn estimate_result_streamed(
    server: VirtualServer,
    plan: &LoadPlan,
    workload: &Workload,
    workload_config: WorkloadConfig,
    opts: &AnalysisOptions,
    include_requests: bool,
    until: Option<&crate::until::Spec>,
) -> Result<(RunResult, SimRun)> {
    let started_unix_s = common::unix_now();
    let cfg = server.engine;
    let run = run_virtual_until(server, plan, workload, until)?;
    let config = RunConfig {
        load: Some(plan.into()),
        workload: Some(workload_config),
        engine: Some(cfg.into()),
        prompts: Some(server.prompts.name().into()),
        percentiles: Some(opts.percentiles.clone()),
        judge: Some(setup::judge_config(opts)),
        stopping: until.map(|u| u.config()),
        ..RunConfig::default()
    };
    let mut result = assemble(
        Assembly {
            tool: common::tool(),
            kind: "estimate",
            run_id: goodput_report::read::records::new_run_id(),
            started_unix_s,
            interrupted: false,
            config,
            target: target_of(cfg),
            include_requests,
        },
        &run.records,
        opts,
    );
    result.stop = until.map(|u| match run.stop.clone() {
        Some(d) => u.settled(d, &run.records),
        None => u.capped(plan, &run.records),
    });
    result.engine = Some(engine_view(cfg, &run.engine));
    result.energy = Some(energy_of(cfg, &run.engine, result.summary.throughput.output_tokens_per_s));
    // The diagnoses read from records alone hold in virtual time too.
    attach_server_side(&mut result, ServerSide::Unscraped, &run.records, plan.client_load());
    Ok((result, run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_load::workload::DatasetEntry;

    fn entry(max_tokens: Option<u32>) -> DatasetEntry {
        DatasetEntry {
            prompt: goodput_load::PromptBody::Text("Q five".into()),
            system: None,
            max_tokens,
            follow_ups: vec![("again".into(), None)],
            follow_up_tokens: vec![1],
            reference: vec!["aaaa bbbb".into()],
            prompt_tokens: 2,
            images: Vec::new(),
        }
    }

    /// SGLang's own share is said where it set it, each pool's where the
    /// configuration is disaggregated; a share given, or another
    /// scheduler, says nothing.
    #[test]
    fn sglang_s_own_memory_share_is_said_where_it_set_it() {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", goodput_sim::engine::Precision::Bf16).unwrap();
        assert_eq!(sglang_share_note(&cfg), None, "vLLM's scheduler");
        cfg.scheduler = SchedulerPolicy::Sglang;
        let note = sglang_share_note(&cfg).unwrap();
        assert!(
            note.starts_with(
                "note: memory share 0.834: SGLang's own --mem-fraction-static default for H100 SXM at \
                 --tp-size 1 and --chunked-prefill-size 8192"
            ),
            "{note}"
        );
        assert!(setup_notes("auto", &cfg).contains(&note));
        cfg.pd = Some(goodput_sim::engine::Disaggregation::parse("1:1").unwrap());
        let pools = sglang_share_note(&cfg).unwrap();
        assert!(pools.contains("0.841 on its prefill instances and 0.874 on its decode ones"), "{pools}");
        cfg.gpu_memory_utilization = Some(0.8);
        assert_eq!(sglang_share_note(&cfg), None, "a share given");
    }

    /// Entries whose "answer" is a reference give no length: the refusal
    /// counts them as bench's --ignore-eos refusal does, and says a
    /// session's turn apart.
    #[test]
    fn a_dataset_without_lengths_is_refused_with_its_count_and_turns_apart() {
        let w = Workload::dataset(vec![entry(None), entry(Some(4)), entry(None), entry(None)], None, 0);
        let e = lengths_refusal(&w, false).to_string();
        assert!(e.contains("3 of the 4 entries of the --dataset give none (no \"max_tokens\", no answer turn"), "{e}");
        assert!(e.contains("add --output-tokens N") && !e.contains("--turns"), "{e}");
        let e = lengths_refusal(&w, true).to_string();
        assert!(e.contains("gives no answer to one of its questions") && !e.contains("of the 4 entries"), "{e}");
        // With --output-tokens every request has a length.
        let given = Workload::dataset(vec![entry(None)], Some(goodput_load::LengthDist::Fixed(8)), 0);
        assert_eq!(given.entries_without_length(), None);
        assert!(given.lengths(0).is_some());
    }
}
