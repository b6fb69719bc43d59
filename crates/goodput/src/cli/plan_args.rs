//! `goodput plan`'s arguments.

use super::groups::{ExportArgs, ShapeArgs, WorkloadArgs, DEFAULT_ENGINE_MODEL};
use super::parse::{
    number, parse_attainment, parse_counts, parse_slo, parse_spec_tokens, CountList, SpecTokens, Units,
};
use clap::Args;
use goodput_core::Slo;
use goodput_load::trace::TraceFormat;
use goodput_load::Api;
use std::path::PathBuf;

/// The most GPUs a plan may take (`--gpus`), so the widest split it may try.
pub const MAX_GPUS: u32 = 4096;

/// A GPU type on offer: its catalog name and, when given, its price per
/// GPU-hour in USD (`h100=2.5`).
#[derive(Debug, Clone, PartialEq)]
pub struct GpuOffer {
    pub name: String,
    pub usd_per_hour: Option<f64>,
}

pub fn parse_gpu_offer(s: &str) -> Result<GpuOffer, String> {
    let (name, price) = match s.split_once('=') {
        Some((n, p)) => (n.trim(), Some(p.trim())),
        None => (s.trim(), None),
    };
    if name.is_empty() {
        return Err(format!("'{s}' names no GPU: write NAME or NAME=USD_PER_GPU_HOUR, e.g. h100=2.5"));
    }
    let usd_per_hour = match price {
        None => None,
        Some(p) => {
            use goodput_core::analysis::cost::{price_fault, price_text, CostError, MAX_GPU_HOUR_USD};
            // The bounds every price has (`price_fault`), and above zero: a
            // plan divides by it.
            let v = p.trim_start_matches('$').parse::<f64>().ok().filter(|&v| v > 0.0);
            match v.map(|v| (v, price_fault(v))) {
                Some((v, None)) => Some(v),
                Some((v, Some(CostError::Dear(_)))) => {
                    return Err(format!(
                        "{name}={} is more than a GPU costs an hour (at most {MAX_GPU_HOUR_USD}): give USD per \
                         GPU-hour, e.g. {name}=2.5",
                        price_text(v)
                    ))
                }
                Some((v, Some(CostError::Tiny(_)))) => {
                    return Err(format!(
                        "{name}={v:e} is less than a millionth of a dollar an hour, where tokens per dollar \
                         overflow: give USD per GPU-hour, e.g. {name}=2.5"
                    ))
                }
                // `h100=2,5`: a decimal comma; `h100=1,000`, a thousands
                // separator or three decimals.
                _ => match decimal_comma(p) {
                    Some((whole, frac)) if frac.len() == 3 => {
                        return Err(format!(
                            "'{p}' is not a price per GPU-hour: write it without a thousands separator and with any \
                             decimals after a point, e.g. {name}={whole}{frac} or {name}={whole}.{frac}"
                        ))
                    }
                    Some((whole, frac)) => {
                        return Err(format!(
                            "'{p}' is not a price per GPU-hour: write its decimals after a point, e.g. \
                             {name}={whole}.{frac}"
                        ))
                    }
                    // `h100=2.5,a100=1`: two offers in one flag.
                    None if p.contains(',') => {
                        return Err(format!(
                            "'{p}' is not a price per GPU-hour: --gpu takes one GPU; repeat the flag for each, e.g. \
                             --gpu {name}={} --gpu {}",
                            p.split(',').next().unwrap_or_default().trim(),
                            p.split_once(',').map_or("", |(_, rest)| rest.trim())
                        ))
                    }
                    None => {
                        return Err(format!(
                            "'{p}' is not a price per GPU-hour: give a positive number of USD, e.g. {name}=2.5"
                        ))
                    }
                },
            }
        }
    };
    Ok(GpuOffer { name: name.to_string(), usd_per_hour })
}

/// A price written with a comma between two runs of digits (`2,5`, `$2, 50`):
/// the digits before it and after.
fn decimal_comma(p: &str) -> Option<(&str, &str)> {
    let (whole, frac) = p.trim().trim_start_matches('$').split_once(',')?;
    let (whole, frac) = (whole.trim(), frac.trim());
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    (digits(whole) && digits(frac)).then_some((whole, frac))
}

// The shared flags plan refuses at run time are left out of its `--help`
// (they had been listed there): it sends each request to its end, in
// closed loops (of single requests or sessions) or at a trace's times, and
// writes no Markdown.
#[derive(Debug, Args)]
#[command(
    mut_arg("markdown", |a| a.hide(true)),
    mut_arg("score", |a| a.hide(true)),
    mut_arg("keep_text", |a| a.hide(true)),
    mut_arg("repeat", |a| a.hide(true)),
    mut_arg("images", |a| a.hide(true)),
    mut_arg("image_size", |a| a.hide(true)),
    mut_arg("image_format", |a| a.hide(true)),
    mut_arg("image_share", |a| a.hide(true)),
    mut_arg("turns", |a| a.help(
        "Multi-turn sessions of this many turns (3, uniform:2..6, …; with a ShareGPT --dataset at most its \
         conversation's, or `all` of them): each user of a point holds one conversation at a time, each question \
         sent after the answer before it with the whole conversation so far. A configuration of several replicas \
         runs whole behind each --router; users who think (--think-time) climb past the batch limit; -n counts \
         sessions"
    )),
    mut_arg("cancel_rate", |a| a.hide(true)),
    mut_arg("cancel_after", |a| a.hide(true)),
    mut_arg("duration", |a| a.hide(true)),
    mut_arg("arrival", |a| a.hide(true)),
    mut_arg("burstiness", |a| a.hide(true))
)]
pub struct PlanArgs {
    /// The model: a catalog name or a Hugging Face config.json (or the folder that holds it).
    #[arg(long, default_value = DEFAULT_ENGINE_MODEL)]
    pub model: String,
    /// A GPU type on offer, with its price per GPU-hour in USD: h100=2.5 (repeat for each type; the price may be left out, and the best point is then chosen per GPU rather than per dollar).
    #[arg(long = "gpu", value_name = "NAME[=USD]", value_parser = parse_gpu_offer, required = true)]
    pub gpu: Vec<GpuOffer>,
    /// The most GPUs a configuration may take: each is tensor-parallel groups (--tp) replicated to fill it.
    #[arg(long = "gpus", default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=MAX_GPUS as i64))]
    pub budget: u32,
    /// Tensor-parallel degrees to try (those above the budget, or that do not divide the model's heads, are left out).
    #[arg(long, value_parser = parse_counts, default_value = "1,2,4,8")]
    pub tp: CountList,
    /// Pipeline-parallel degrees to try: for each TP, every one that makes the model fit within the budget (more stages add hand-offs, never speed, but free each GPU's memory for more users).
    #[arg(long, value_parser = parse_counts, default_value = "1,2,4,8")]
    pub pp: CountList,
    /// Expert-parallel sizes to try for a mixture of experts (each a multiple of TP over data-parallel ranks that share the experts; ignored for a dense model).
    #[arg(long, value_parser = parse_counts, default_value = "1")]
    pub ep: CountList,
    /// Weight precisions to try, each once: a list of bf16, fp8, fp4, int8, int4, or auto (bf16, and fp8 and fp4 on the GPUs that have them).
    #[arg(long, default_value = "auto")]
    pub precision: String,
    /// Batch limits (vLLM's --max-num-seqs) to try: each configuration's load rises to its limit (default: vLLM's, 1024 on GPUs of 70 GiB or more but the A100, else 256, never above the step's token budget; a limit above a --max-num-batched-tokens is left out there, as vLLM refuses it).
    #[arg(long, value_parser = parse_counts)]
    pub max_num_seqs: Option<CountList>,
    /// Chunked-prefill token budgets (vLLM's --max-num-batched-tokens) to try.
    #[arg(long, value_parser = parse_counts, default_value = "2048,8192")]
    pub max_num_batched_tokens: CountList,
    /// KV-cache dtypes to try: auto (the activation dtype), fp8, or auto,fp8 to search both (an FP8 cache holds twice the tokens, and attention reads half the bytes).
    #[arg(long, default_value = "auto")]
    pub kv_cache_dtype: String,
    /// Prefill/decode disaggregation ratios to search beside colocated serving: a list of P:D (P prefill and D decode instances, each on --tp GPUs, the unit replicated to fill --gpus; either pool may name its own TP, 4xTP1:1xTP4, searched as given), or auto (every P:D in lowest terms with P + D ≤ 5, less those the workload would leave far out of balance).
    #[arg(long, value_name = "auto|P:D,...")]
    pub pd: Option<String>,
    /// Speculative decoding's draft lengths to try, 0 for none (vLLM's num_speculative_tokens): 0,3 runs each configuration without and with three draft tokens a step. Drafts speed one user's stream and cost compute that a large batch pays for.
    #[arg(long, value_parser = parse_spec_tokens, default_value = "0")]
    pub spec_tokens: SpecTokens,
    /// With --spec-tokens: the first draft position's acceptance, each later one accepted with this chance when the ones before it were (as estimate --spec-acceptance; take it from a live server's spec_decode.acceptance_by_position[0]) [default: 0.7].
    #[arg(long, value_parser = number("--spec-acceptance", "an acceptance from 0 to 1", "0.7", Units::Share))]
    pub spec_acceptance: Option<f64>,
    /// With --spec-tokens: the drafter's time per draft token as a share of the verifying step's (an EAGLE or MTP head: a few percent; n-gram lookup: 0) [default: 0.05].
    #[arg(long, value_parser = number("--spec-draft-cost", "a share of a step's time", "0.05", Units::Share))]
    pub spec_draft_cost: Option<f64>,
    /// Under --serve-engine sglang: SGLang's --load-balance-method for the ranks of its DP attention, a list to try: auto (its default: round-robin, and on a disaggregated prefill instance the bootstrap room), round-robin, total-requests, total-tokens. A configuration with ranks (more --ep than --tp, in either pool) runs each; one without runs once.
    #[arg(long, value_delimiter = ',', value_parser = parse_load_balance, default_value = "auto")]
    pub load_balance_method: Vec<goodput_sim::engine::LoadBalance>,
    /// Under --serve-engine sglang: prompts and decodes in separate steps (off, SGLang's default) or a prompt chunk and the running decodes in one (on: its --enable-mixed-chunk), a list to try: off,on runs each colocated configuration both ways (a disaggregated instance prefills or decodes, and runs once).
    #[arg(long, value_delimiter = ',', value_parser = parse_on_off, default_value = "off")]
    pub mixed_chunk: Vec<bool>,
    /// For an MXFP4 mixture of experts (GPT-OSS): what its experts multiply against, a list to try: fp8 (W4A8, MXFP4 × MXFP8, on FP4 tensor cores only) or bf16 (W4A16, 16-bit activations); fp8,bf16 runs each MXFP4 configuration on an FP4-core GPU both ways. Default: the server's own (vLLM's 16-bit; SGLang's and TensorRT-LLM's FP8 on FP4 cores; 16-bit without them). The commands set the server's switch where one is known (vLLM's VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1, SGLang's --flashinfer-mxfp4-moe-precision bf16).
    #[arg(long, value_delimiter = ',', value_parser = parse_mxfp4_activations)]
    pub mxfp4_activations: Vec<goodput_sim::engine::Mxfp4Activations>,
    /// Predict every configuration with its scheduler a step ahead: step N+1 chosen while step N runs, so a request that reaches a busy engine joins the step after next (about a step more TTFT under load). The default, as the servers run by default (vLLM since 0.14, SGLang's overlap schedule, TensorRT-LLM's overlap scheduler), but for vLLM with pipeline parallelism, which 0.14 left without: given, those too, and their commands pass --async-scheduling.
    #[arg(long)]
    pub async_scheduling: bool,
    /// Predict every configuration with each step chosen after the one before ends, and start the servers so: vLLM's --no-async-scheduling, SGLang's --disable-overlap-schedule, TensorRT-LLM's disable_overlap_scheduler.
    #[arg(long, conflicts_with = "async_scheduling")]
    pub no_async_scheduling: bool,
    /// Share of GPU memory the engine may use (vLLM's --gpu-memory-utilization, SGLang's --mem-fraction-static); under --serve-engine trtllm, the share of the memory the weights leave free that its KV cache takes (TensorRT-LLM's free_gpu_memory_fraction), as the plan then predicts it. Default: the engine's own (0.9; SGLang's, set for each configuration from the GPU's memory, its chunk, CUDA graphs and TP), and the launch commands leave the flag out.
    #[arg(long, value_parser = number("--gpu-memory-utilization", "a share of GPU memory", "0.9", Units::Share))]
    pub gpu_memory_utilization: Option<f64>,
    /// Users per replica of each curve's points, rising (default: 1, 2, 4, … up to the batch limit); a curve stops early once its throughput stops rising, or it misses the SLO (twice in a row where TTFT alone missed). The table and -o label each point with its total users, over all the configuration's replicas.
    #[arg(long, value_parser = parse_counts)]
    pub concurrency: Option<CountList>,
    /// Requests each user sends at a point, after one warm-up request each (-n/--requests sets a point's total instead, raised to at least 4 per user: fewer leave no steady time to measure). With --turns, as many sessions as hold them at the mean turns (at least one), after one warm-up session each; -n then counts sessions.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub requests_per_user: u64,
    /// Per-request limits and/or percentile objectives, e.g. 'ttft:p95<=1s,tpot:p95<=50ms' (given again, its terms join the others'): the best point must meet them, and a curve stops at its first point that does not (at its second in a row where TTFT alone missed: TTFT can fall as more users batch their prompts).
    #[arg(long, value_parser = parse_slo, action = clap::ArgAction::Append)]
    pub slo: Option<Slo>,
    /// Share of requests that must meet the SLO's per-request limits (default 90%).
    #[arg(long, value_parser = parse_attainment)]
    pub attainment: Option<f64>,
    /// The percentile TTFT, TPOT and tokens/s per user are given at when the SLO names none (default 50).
    #[arg(long, value_parser = parse_percentile_value)]
    pub percentile: Option<f64>,
    /// Which route the requests model (the chat template around each prompt, or a raw prompt's BOS).
    #[arg(long, value_enum, default_value_t = Api::Chat)]
    pub api: Api,
    /// Replay this trace against each whole configuration (its replicas behind the router) at rising speeds, instead of closed loops of users: its requests' lengths (and Mooncake's shared prefix blocks) are the workload, its send times the load. Formats as bench --trace.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The --trace file's format; auto tells it from the first line.
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto, requires = "trace")]
    pub trace_format: TraceFormat,
    /// Speeds to replay the --trace at, each a curve's point (2 halves every gap; default 0.25,0.5,1,2,4,8,16, then doubling up to 4096 while a curve meets the SLO and still rises): a curve stops at a miss of the SLO, once its throughput stops rising, or at a point not steady (the trace coming faster than the configuration serves it); speeds given are run as given, with a note naming the curves they leave still rising.
    #[arg(long, value_delimiter = ',', requires = "trace", value_parser = number("--trace-speed", "how many times faster to replay", "2", Units::Times))]
    pub trace_speed: Option<Vec<f64>>,
    /// Routers in front of the replicas to try with --trace or --turns: round-robin, least-loaded, prefix-aware, power-of-two (default least-loaded).
    #[arg(long, value_delimiter = ',')]
    pub router: Option<Vec<String>>,
    /// A JSON file of step-time constants, as estimate --calibration reads: constants for every GPU, or an object of them per GPU family ({"hopper": {"eta_compute": 0.48}}), what estimate --validate --fit writes from your own measurements. A family it leaves out keeps its shipped constants.
    #[arg(long, value_name = "FILE")]
    pub calibration: Option<PathBuf>,
    /// Simulations run at once (default: the CPUs available).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub jobs: Option<u32>,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Write the frontier (schema goodput/v1, kind frontier) to this JSON file.
    #[arg(long, short = 'o', visible_alias = "json")]
    pub output: Option<PathBuf>,
    /// Print only the frontier, not each configuration as it is done.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub exports: ExportArgs,
    /// Write the frontier's configurations as a sweep --serve-grid file (TOML), each with the command that starts it (--serve-engine), and the sweep and compare commands that measure them beside the plan in its header; one file per GPU type where there are several (grid-h100-sxm.toml).
    #[arg(long, help_heading = "Measuring the plan")]
    pub grid_out: Option<PathBuf>,
    /// The server the plan's commands start: vllm (vllm serve), sglang (python3 -m sglang.launch_server, whose scheduler the plan then runs), trtllm (TensorRT-LLM's trtllm-serve, by a script that writes its options file first; the plan then runs TensorRT-LLM's scheduler), or goodput (goodput serve --profile engine: the simulated engine behind real HTTP, every knob included, to rehearse the measurement with no GPU).
    #[arg(long, value_enum, default_value_t = crate::launch::Server::Vllm, help_heading = "Measuring the plan")]
    pub serve_engine: crate::launch::Server,
    /// The weights the server loads in the commands the plan gives (a Hugging Face id or a folder) [default: the catalog model's published instruct weights, or a config.json's folder].
    #[arg(long, help_heading = "Measuring the plan")]
    pub serve_model: Option<String>,
    /// Weights at a width the model is not published in, for the commands of the configurations at that width: fp4=nvidia/Llama-3.3-70B-Instruct-NVFP4, int4=WEIGHTS, int8=WEIGHTS, fp8=WEIGHTS (repeat it for each) [default: the checkpoints published for the catalog's models that goodput knows; FP8 from 16-bit weights is quantized as they load].
    #[arg(long, value_name = "PRECISION=WEIGHTS", help_heading = "Measuring the plan")]
    pub serve_checkpoint: Vec<String>,
    /// The drafter of the configurations that draft (--spec-tokens): eagle3=WEIGHTS (an EAGLE-3 head), eagle=WEIGHTS, draft=WEIGHTS (a smaller model with the same tokenizer) or mtp (the model's own multi-token-prediction layers, as DeepSeek-V3's) [default: the one published for the catalog model, where goodput knows one].
    #[arg(long, value_name = "DRAFTER", value_parser = |s: &str| s.parse::<crate::launch::Drafter>(), help_heading = "Measuring the plan")]
    pub serve_drafter: Option<crate::launch::Drafter>,
}

/// One of `--mixed-chunk`'s list: on or off (true or false, yes or no, 1 or 0).
fn parse_on_off(s: &str) -> Result<bool, String> {
    goodput_core::doc::overlay::switch_value(s)
        .ok_or_else(|| format!("'{s}' is neither on nor off: give off (SGLang's default), on, or off,on to try both"))
}

/// One of `--mxfp4-activations`' list: fp8 or bf16.
fn parse_mxfp4_activations(s: &str) -> Result<goodput_sim::engine::Mxfp4Activations, String> {
    s.parse()
}

/// One of `--load-balance-method`'s list, as SGLang or goodput spells it.
fn parse_load_balance(s: &str) -> Result<goodput_sim::engine::LoadBalance, String> {
    s.parse().map_err(|e: goodput_sim::engine::Error| e.to_string())
}

/// `--percentile`: one percentile, above 0 and at most 100 (`95` or
/// `p95`; p0 had been taken, and latencies "at p0" printed).
pub fn parse_percentile_value(s: &str) -> Result<f64, String> {
    match s.trim().trim_start_matches('p').parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(format!("'{s}' is not a percentile: give one above 0 and at most 100, e.g. 95")),
    }
}
