//! From a plan to a measurement: each predicted configuration as vLLM's
//! command line (`FrontierConfig::serve_command`), and `plan --grid-out`,
//! the frontier's configurations as a `sweep --serve-grid` file per GPU
//! type, with the sweep and compare commands that measure them and set the
//! measurement beside the prediction.
//!
//! The flags are vLLM's `vllm serve` flags: `--tensor-parallel-size`,
//! `--pipeline-parallel-size`, `--data-parallel-size`,
//! `--enable-expert-parallel` (which spreads the experts over all TP × DP
//! GPUs), `--quantization fp8` (weights quantized as they load) or
//! `--dtype bfloat16`, `--kv-cache-dtype fp8`, `--max-num-seqs`,
//! `--max-num-batched-tokens` and `--gpu-memory-utilization`. A width the
//! weights are not published in is loaded from a quantized checkpoint
//! (`--serve-checkpoint`, or one of [`CHECKPOINTS`]), and speculative
//! decoding names its drafter (`--serve-drafter`, or one of [`DRAFTERS`]) in
//! `--speculative-config`. Prefill apart from decode is several servers
//! and a router in front, started by a script ([`servers_script`]). What has
//! no command (a width or a drafter with no weights known, an
//! expert-parallel layout the server does not make) says why.

use anyhow::{bail, Context, Result};
use goodput_core::doc::config::ep_ranks;
use goodput_core::doc::frontier::{FrontierConfig, FrontierResult, ParamMap, ServeCommand};
use goodput_core::doc::overlay::KNOBS;
use goodput_core::doc::sweep::Load;
use goodput_sim::engine::disagg::MAX_INSTANCES;
use goodput_sim::engine::{Disaggregation, GpuSpec, LoadBalance, ModelSpec, Precision, RouterPolicy};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;

mod trtllm;

/// The catalog's models as their publishers name their instruction-tuned
/// weights on Hugging Face, by the catalog key the name is looked up by
/// ([`ModelSpec::catalog_key`]).
const HUB_IDS: [(&str, &str); 32] = [
    ("llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama3.1-8b", "meta-llama/Llama-3.1-8B-Instruct"),
    ("llama-3-8b", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("llama3-8b", "meta-llama/Meta-Llama-3-8B-Instruct"),
    ("llama-3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"),
    ("llama3.1-70b", "meta-llama/Llama-3.1-70B-Instruct"),
    ("llama-3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
    ("llama3.3-70b", "meta-llama/Llama-3.3-70B-Instruct"),
    ("llama-3-70b", "meta-llama/Meta-Llama-3-70B-Instruct"),
    ("llama3-70b", "meta-llama/Meta-Llama-3-70B-Instruct"),
    ("llama-3.1-405b", "meta-llama/Llama-3.1-405B-Instruct"),
    ("llama3.1-405b", "meta-llama/Llama-3.1-405B-Instruct"),
    ("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct"),
    ("qwen-2.5-7b", "Qwen/Qwen2.5-7B-Instruct"),
    ("qwen2.5-72b", "Qwen/Qwen2.5-72B-Instruct"),
    ("qwen-2.5-72b", "Qwen/Qwen2.5-72B-Instruct"),
    ("mixtral-8x7b", "mistralai/Mixtral-8x7B-Instruct-v0.1"),
    ("qwen3-8b", "Qwen/Qwen3-8B"),
    ("qwen3-14b", "Qwen/Qwen3-14B"),
    ("qwen3-32b", "Qwen/Qwen3-32B"),
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
    ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"),
    ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1"),
    ("deepseek-v3-0324", "deepseek-ai/DeepSeek-V3-0324"),
    ("deepseek-r1-0528", "deepseek-ai/DeepSeek-R1-0528"),
    ("gpt-oss-120b", "openai/gpt-oss-120b"),
    ("gpt-oss-20b", "openai/gpt-oss-20b"),
    ("llama-4-maverick-17b-128e", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
    ("llama-4-maverick", "meta-llama/Llama-4-Maverick-17B-128E-Instruct"),
    ("llama-4-scout-17b-16e", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
    ("llama-4-scout", "meta-llama/Llama-4-Scout-17B-16E-Instruct"),
];

/// What the server loads: `--serve-model` where given; else the folder of
/// a local config.json (or the folder named); else a Hugging Face id as
/// typed (`org/name`); else the catalog model's published id. None for a
/// catalog name with no id here.
pub fn served_model(model: &str, given: Option<&str>) -> Option<String> {
    if let Some(g) = given {
        return Some(g.to_string());
    }
    let p = Path::new(model);
    if p.is_file() {
        let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        return Some(dir.display().to_string());
    }
    if p.is_dir() || model.contains('/') {
        return Some(model.to_string());
    }
    let key = ModelSpec::catalog_key(model);
    HUB_IDS.iter().find(|(a, _)| *a == key).map(|(_, id)| id.to_string())
}

/// Checkpoints their publishers give of the catalog's models at a width
/// other than the model's own: (the model's published id, the width, the
/// checkpoint's id). Each id was looked up on its Hugging Face page or in
/// the commands that serve it: NVIDIA's ModelOpt NVFP4 and FP8
/// checkpoints (Qwen's own FP8), AWQ INT4 (hugging-quants', Qwen's own)
/// and W8A16 INT8 (Neural Magic's, now Red Hat AI's). The servers read the
/// quantization method from the checkpoint, so its command names none.
pub const CHECKPOINTS: [(&str, Precision, &str); 29] = [
    ("meta-llama/Llama-3.1-8B-Instruct", Precision::Fp4, "nvidia/Llama-3.1-8B-Instruct-FP4"),
    ("meta-llama/Llama-3.3-70B-Instruct", Precision::Fp4, "nvidia/Llama-3.3-70B-Instruct-NVFP4"),
    ("meta-llama/Llama-3.1-405B-Instruct", Precision::Fp4, "nvidia/Llama-3.1-405B-Instruct-FP4"),
    ("deepseek-ai/DeepSeek-R1", Precision::Fp4, "nvidia/DeepSeek-R1-FP4"),
    ("deepseek-ai/DeepSeek-R1-0528", Precision::Fp4, "nvidia/DeepSeek-R1-0528-FP4"),
    ("deepseek-ai/DeepSeek-V3-0324", Precision::Fp4, "nvidia/DeepSeek-V3-0324-FP4"),
    ("Qwen/Qwen3-30B-A3B", Precision::Fp4, "nvidia/Qwen3-30B-A3B-FP4"),
    ("Qwen/Qwen3-235B-A22B", Precision::Fp4, "nvidia/Qwen3-235B-A22B-FP4"),
    ("meta-llama/Llama-3.1-8B-Instruct", Precision::Int4, "hugging-quants/Meta-Llama-3.1-8B-Instruct-AWQ-INT4"),
    ("meta-llama/Llama-3.1-70B-Instruct", Precision::Int4, "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"),
    ("meta-llama/Llama-3.1-405B-Instruct", Precision::Int4, "hugging-quants/Meta-Llama-3.1-405B-Instruct-AWQ-INT4"),
    ("Qwen/Qwen2.5-7B-Instruct", Precision::Int4, "Qwen/Qwen2.5-7B-Instruct-AWQ"),
    ("Qwen/Qwen2.5-72B-Instruct", Precision::Int4, "Qwen/Qwen2.5-72B-Instruct-AWQ"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", Precision::Int8, "neuralmagic/Meta-Llama-3-8B-Instruct-quantized.w8a16"),
    ("meta-llama/Llama-3.1-8B-Instruct", Precision::Int8, "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w8a16"),
    ("meta-llama/Llama-3.1-70B-Instruct", Precision::Int8, "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a16"),
    ("meta-llama/Llama-3.1-405B-Instruct", Precision::Int8, "neuralmagic/Meta-Llama-3.1-405B-Instruct-quantized.w8a16"),
    ("Qwen/Qwen2.5-7B-Instruct", Precision::Int8, "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a16"),
    // FP8 as published (NVIDIA ModelOpt's, Qwen's own), for the servers
    // that do not quantize 16-bit weights as they load (TensorRT-LLM);
    // vLLM and SGLang quantize the model's own.
    ("meta-llama/Llama-3.1-8B-Instruct", Precision::Fp8, "nvidia/Llama-3.1-8B-Instruct-FP8"),
    ("meta-llama/Llama-3.1-70B-Instruct", Precision::Fp8, "nvidia/Llama-3.1-70B-Instruct-FP8"),
    ("meta-llama/Llama-3.3-70B-Instruct", Precision::Fp8, "nvidia/Llama-3.3-70B-Instruct-FP8"),
    ("meta-llama/Llama-3.1-405B-Instruct", Precision::Fp8, "nvidia/Llama-3.1-405B-Instruct-FP8"),
    ("Qwen/Qwen3-8B", Precision::Fp8, "Qwen/Qwen3-8B-FP8"),
    ("Qwen/Qwen3-14B", Precision::Fp8, "Qwen/Qwen3-14B-FP8"),
    ("Qwen/Qwen3-32B", Precision::Fp8, "Qwen/Qwen3-32B-FP8"),
    ("Qwen/Qwen3-30B-A3B", Precision::Fp8, "Qwen/Qwen3-30B-A3B-FP8"),
    ("Qwen/Qwen3-235B-A22B", Precision::Fp8, "Qwen/Qwen3-235B-A22B-FP8"),
    // As TensorRT-LLM's perf overview names them.
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", Precision::Fp8, "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8"),
    (
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        Precision::Fp4,
        "nvidia/Llama-4-Maverick-17B-128E-Instruct-NVFP4",
    ),
];

/// AMD's MXFP4 checkpoints of the catalog's models (AMD-Quark's, for the
/// MI350 and MI355, served by vLLM and SGLang; its "Quark Quantized MXFP4
/// models" collection on Hugging Face, each page looked up): FP4 on AMD's
/// GPUs, where NVIDIA's NVFP4 ones do not load.
pub const AMD_FP4_CHECKPOINTS: [(&str, &str); 4] = [
    ("meta-llama/Llama-3.3-70B-Instruct", "amd/Llama-3.3-70B-Instruct-MXFP4-Preview"),
    ("meta-llama/Llama-3.1-405B-Instruct", "amd/Llama-3.1-405B-Instruct-MXFP4-Preview"),
    ("deepseek-ai/DeepSeek-R1", "amd/DeepSeek-R1-MXFP4"),
    ("deepseek-ai/DeepSeek-R1-0528", "amd/DeepSeek-R1-0528-MXFP4"),
];

/// Drafters published for the catalog's models, by the model's published
/// id: the EAGLE-3 heads of the EAGLE authors (served by vLLM and SGLang
/// alike), and DeepSeek-V3's and R1's own multi-token-prediction layer.
pub const DRAFTERS: [(&str, &str); 6] = [
    ("meta-llama/Llama-3.1-8B-Instruct", "eagle3=yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"),
    ("meta-llama/Llama-3.3-70B-Instruct", "eagle3=yuhuili/EAGLE3-LLaMA3.3-Instruct-70B"),
    ("deepseek-ai/DeepSeek-V3", "mtp"),
    ("deepseek-ai/DeepSeek-V3-0324", "mtp"),
    ("deepseek-ai/DeepSeek-R1", "mtp"),
    ("deepseek-ai/DeepSeek-R1-0528", "mtp"),
];

/// What drafts the tokens of speculative decoding (`--serve-drafter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Drafter {
    /// An EAGLE-3 head (`eagle3=WEIGHTS`).
    Eagle3(String),
    /// An EAGLE or EAGLE-2 head (`eagle=WEIGHTS`).
    Eagle(String),
    /// A smaller model with the same tokenizer (`draft=WEIGHTS`).
    Model(String),
    /// The model's own multi-token-prediction layers (`mtp`: DeepSeek-V3's).
    Mtp,
}

impl FromStr for Drafter {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("mtp") {
            return Ok(Drafter::Mtp);
        }
        let usage = "eagle3=WEIGHTS (an EAGLE-3 head), eagle=WEIGHTS (an EAGLE head), draft=WEIGHTS (a smaller model \
                     with the same tokenizer) or mtp (the model's own multi-token-prediction layers)";
        let Some((method, weights)) = s.split_once('=') else {
            return Err(format!("--serve-drafter {s}: say what drafts: {usage}"));
        };
        let weights = weights.trim();
        if weights.is_empty() {
            return Err(format!("--serve-drafter {s}: no weights after '=': give {usage}"));
        }
        match method.trim().to_ascii_lowercase().as_str() {
            "eagle3" => Ok(Drafter::Eagle3(weights.into())),
            "eagle" => Ok(Drafter::Eagle(weights.into())),
            "draft" => Ok(Drafter::Model(weights.into())),
            other => Err(format!("--serve-drafter: '{other}' is not a drafter known here: give {usage}")),
        }
    }
}

/// `--serve-checkpoint PRECISION=WEIGHTS`, each width once.
pub fn parse_checkpoints(given: &[String]) -> Result<Vec<(Precision, String)>> {
    let mut out: Vec<(Precision, String)> = Vec::new();
    for g in given {
        let Some((p, w)) = g.split_once('=').filter(|(_, w)| !w.trim().is_empty()) else {
            bail!(
                "--serve-checkpoint {g}: give the width and the weights, e.g. fp4=nvidia/Llama-3.3-70B-Instruct-NVFP4"
            );
        };
        let p: Precision = p.parse().map_err(|e| anyhow::anyhow!("--serve-checkpoint {g}: {e}"))?;
        if out.iter().any(|(q, _)| *q == p) {
            bail!("--serve-checkpoint names {p} twice: give one checkpoint a width");
        }
        out.push((p, w.trim().to_string()));
    }
    Ok(out)
}

/// How the server comes by a configuration's weights at its width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loaded {
    /// 16-bit weights: `--dtype bfloat16`.
    Bf16,
    /// 16-bit weights quantized to FP8 as they load: `--quantization fp8`.
    Fp8OnLoad,
    /// A checkpoint stored at the width: the server reads its method.
    Checkpoint,
}

/// Where the weights of a plan's commands come from.
#[derive(Debug, Clone, Default)]
pub struct Weights {
    /// What the server loads at the model's own width ([`served_model`]).
    pub served: Option<String>,
    /// The model's own width: its checkpoint's, 16-bit where it names none.
    pub width: Option<Precision>,
    /// `--serve-checkpoint`: weights at other widths.
    pub checkpoints: Vec<(Precision, String)>,
    /// `--serve-drafter`.
    pub drafter: Option<Drafter>,
}

impl Weights {
    /// The published checkpoint of the served weights at width `p`: on
    /// AMD's GPUs (`amd`) FP4 is AMD's MXFP4 one.
    fn published(&self, p: Precision, amd: bool) -> Option<&'static str> {
        let served = self.served.as_deref()?;
        if amd && p == Precision::Fp4 {
            return AMD_FP4_CHECKPOINTS.iter().find(|(id, _)| id.eq_ignore_ascii_case(served)).map(|(_, c)| *c);
        }
        CHECKPOINTS.iter().find(|(id, w, _)| id.eq_ignore_ascii_case(served) && *w == p).map(|(_, _, c)| *c)
    }

    /// The weights at width `p` on `server`, and how they load; or why
    /// there are none. On AMD's GPUs (`amd`) FP4 is MXFP4, which NVIDIA's
    /// NVFP4 checkpoints are not: only one given loads there. TensorRT-LLM
    /// quantizes nothing as it loads, and of the published checkpoints
    /// takes the FP8 and NVFP4 ones (NVIDIA ModelOpt's format).
    fn at(&self, p: Precision, server: Server, amd: bool) -> Result<(String, Loaded), String> {
        let title = server.title();
        let trtllm = server == Server::Trtllm;
        if let Some((_, w)) = self.checkpoints.iter().find(|(q, _)| *q == p) {
            let loaded = if p == Precision::Bf16 { Loaded::Bf16 } else { Loaded::Checkpoint };
            return Ok((w.clone(), loaded));
        }
        let own = self.width.unwrap_or(Precision::Bf16);
        if let Some(served) = &self.served {
            match (own, p) {
                (Precision::Bf16, Precision::Bf16) => return Ok((served.clone(), Loaded::Bf16)),
                (Precision::Bf16, Precision::Fp8) if !trtllm => return Ok((served.clone(), Loaded::Fp8OnLoad)),
                (own, p) if own == p => return Ok((served.clone(), Loaded::Checkpoint)),
                _ => {}
            }
        }
        if let Some(c) = self.published(p, amd).filter(|_| !trtllm || matches!(p, Precision::Fp8 | Precision::Fp4)) {
            return Ok((c.to_string(), Loaded::Checkpoint));
        }
        let Some(served) = &self.served else {
            return Err(format!(
                "no Hugging Face id is known for the model: give the weights the server loads as --serve-model (an \
                 id or a folder){}",
                if p == Precision::Bf16 { String::new() } else { format!(", or --serve-checkpoint {p}=WEIGHTS") }
            ));
        };
        let fix = format!("give one as --serve-checkpoint {p}=WEIGHTS");
        Err(match p {
            Precision::Fp8 if trtllm => format!(
                "FP8 weights: {title} loads them from an FP8 checkpoint (NVIDIA ModelOpt's), quantizing nothing as \
                 it loads, and none of {served} is known here: {fix}"
            ),
            Precision::Int4 | Precision::Int8 if trtllm => format!(
                "{} weights: {title} loads them from a checkpoint NVIDIA ModelOpt quantized, and none of {served} is \
                 known here: {fix}",
                p.as_str().to_uppercase()
            ),
            Precision::Fp4 if amd => format!(
                "FP4 weights: on AMD's GPUs {title} loads them from an MXFP4 checkpoint (AMD Quark's), not NVIDIA's \
                 NVFP4, and none of {served} is known here: {fix}"
            ),
            Precision::Fp4 => format!(
                "FP4 weights: {title} loads them from an NVFP4 checkpoint (NVIDIA ModelOpt's or LLM Compressor's), \
                 and none of {served} is known here: {fix}"
            ),
            Precision::Int4 => format!(
                "INT4 weights: {title} loads them from an AWQ or GPTQ checkpoint, and none of {served} is known \
                 here: {fix}"
            ),
            Precision::Int8 => format!(
                "INT8 weights: {title} loads them from a W8A16 checkpoint, and none of {served} is known here: {fix}"
            ),
            Precision::Mxfp4 => format!(
                "MXFP4 weights: {title} loads them from an MXFP4 checkpoint (as OpenAI publishes GPT-OSS), and none \
                 of {served} is known here: {fix}"
            ),
            Precision::Fp8 | Precision::Bf16 => format!(
                "{} weights: {served} is published in {own}, which {title} does not turn into {p}: {fix}",
                p.as_str().to_uppercase()
            ),
        })
    }

    /// The drafter: `--serve-drafter`, else the one published for the
    /// served weights.
    fn drafter(&self) -> Option<Drafter> {
        self.drafter.clone().or_else(|| {
            let served = self.served.as_deref()?;
            DRAFTERS.iter().find(|(id, _)| id.eq_ignore_ascii_case(served)).and_then(|(_, d)| d.parse().ok())
        })
    }
}

/// The flags that draft `k` tokens a step with `drafter`.
fn speculative_flags(server: Server, drafter: &Drafter, k: u32) -> Vec<String> {
    match server {
        Server::Vllm => {
            let (method, model) = match drafter {
                Drafter::Eagle3(m) => ("eagle3", Some(m)),
                Drafter::Eagle(m) => ("eagle", Some(m)),
                Drafter::Model(m) => ("draft_model", Some(m)),
                Drafter::Mtp => ("mtp", None),
            };
            let mut cfg = serde_json::Map::new();
            cfg.insert("method".into(), method.into());
            if let Some(m) = model {
                cfg.insert("model".into(), m.as_str().into());
            }
            cfg.insert("num_speculative_tokens".into(), k.into());
            vec!["--speculative-config".into(), serde_json::Value::Object(cfg).to_string()]
        }
        _ => {
            // A chain of k drafts: k steps of one candidate each, verified with the token before them.
            let (algorithm, path) = match drafter {
                Drafter::Eagle3(m) => ("EAGLE3", Some(m)),
                Drafter::Eagle(m) => ("EAGLE", Some(m)),
                Drafter::Model(m) => ("STANDALONE", Some(m)),
                // DeepSeek's own layer drafts as EAGLE does, its weights in the checkpoint.
                Drafter::Mtp => ("EAGLE", None),
            };
            let mut f = vec!["--speculative-algorithm".to_string(), algorithm.into()];
            if let Some(p) = path {
                f.extend(["--speculative-draft-model-path".into(), p.clone()]);
            }
            f.extend(["--speculative-num-steps".into(), k.to_string(), "--speculative-eagle-topk".into(), "1".into()]);
            f.extend(["--speculative-num-draft-tokens".into(), (k + 1).to_string()]);
            f
        }
    }
}

/// The server a plan's commands start (`plan --serve-engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Server {
    /// `vllm serve`.
    #[default]
    Vllm,
    /// SGLang's `python3 -m sglang.launch_server`.
    Sglang,
    /// TensorRT-LLM's `trtllm-serve` (its PyTorch backend), started by a
    /// script that writes the options it takes from a YAML file first.
    Trtllm,
    /// `goodput serve --profile engine`: the simulated engine behind real
    /// HTTP, every knob included, to rehearse the measurement with no GPU.
    Goodput,
}

impl Server {
    /// As the document names it (`serve_command.server`).
    pub fn name(self) -> &'static str {
        match self {
            Server::Vllm => "vllm",
            Server::Sglang => "sglang",
            Server::Trtllm => "trtllm",
            Server::Goodput => "goodput",
        }
    }

    /// As prose names it.
    pub(crate) fn title(self) -> &'static str {
        match self {
            Server::Vllm => "vLLM",
            Server::Sglang => "SGLang",
            Server::Trtllm => "TensorRT-LLM",
            Server::Goodput => "goodput serve",
        }
    }
}

/// `goodput serve`'s flags for a configuration: each of the simulator's
/// knobs ([`KNOBS`]) has a flag of its own name, and so do the settings plan
/// names beside them (the router, the drafts' acceptance and cost).
/// Disaggregated, `--pd` names every unit's instances and `--dp` is left
/// out: the engine's pools are the instances (it refuses `--dp` beside
/// them).
fn goodput_flags(params: &ParamMap, gpu_memory_utilization: Option<f64>) -> Result<Vec<String>, String> {
    let flag = |k: &str| {
        KNOBS.contains(&k) || matches!(k, "router" | "spec_acceptance" | "spec_draft_cost" | "load_balance_method")
    };
    let pools = Servers::pools(params).transpose()?;
    let mut flags = Vec::new();
    for (k, v) in params.iter().filter(|(k, _)| flag(k)) {
        // Prompts and decodes apart is a switch (SGLang's default, which
        // plan names); together is the server's own default.
        if k == "mixed_batches" {
            if goodput_core::doc::overlay::switch_value(v) == Some(false) {
                flags.push("--no-mixed-batches".into());
            }
            continue;
        }
        // vLLM's own balancing of its replicas is a switch too, and so is
        // scheduling a step ahead (on by default, as the servers run).
        if k == "internal_lb" || k == "async_scheduling" {
            match (k.as_str(), goodput_core::doc::overlay::switch_value(v)) {
                ("internal_lb", Some(true)) => flags.push("--internal-lb".into()),
                ("async_scheduling", Some(on)) => {
                    flags.push(if on { "--async-scheduling" } else { "--no-async-scheduling" }.into())
                }
                _ => {}
            }
            continue;
        }
        let v = match (k.as_str(), &pools) {
            ("dp", Some(_)) => continue,
            ("pd", Some(Servers { spec: Some(spec), .. })) => spec.as_str(),
            _ => v.trim(),
        };
        flags.extend([format!("--{}", k.replace('_', "-")), v.to_string()]);
    }
    // Where none was given, the engine's own default, as the plan took it.
    if let Some(share) = gpu_memory_utilization {
        flags.extend(["--gpu-memory-utilization".into(), share.to_string()]);
    }
    Ok(flags)
}

/// What one of several servers of a configuration does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Prefill,
    Decode,
    /// A data-parallel replica of the whole model.
    Replica,
}

/// A configuration that runs as several servers behind a router: prefill
/// apart from decode (every unit's prefill instances, then every unit's
/// decode instances: a unit's pools are the plan's `pd`, and its `dp`
/// counts the units' prefill-pool ranks, as plan counts them), or
/// data-parallel replicas that the plan's router spreads requests over
/// where the server's own balancing of its ranks is another policy.
#[derive(Debug, Clone, PartialEq)]
struct Servers {
    /// Prefill apart from decode: all the units' pools together, as
    /// `goodput serve --pd` takes them.
    spec: Option<String>,
    /// Replicas: the routers' policy (`round_robin`, `cache_aware`).
    policy: Option<&'static str>,
    /// Each server: its role, its knobs as one server's (its pool's TP, its
    /// expert-parallel group as DP ranks), and its GPUs.
    instances: Vec<(Role, ParamMap, u32)>,
}

/// Whether `server` starts a layout of TP `tp`, EP `ep` over `dp` ranks as
/// a server an expert-parallel group (or a replica) behind the router,
/// where there are several: vLLM's experts span every GPU of a server,
/// SGLang's its DP attention's (or each replica's TP, where EP is TP), and
/// trtllm-serve serves one replica, dense or not. The plan's least-loaded
/// is then the router's `power_of_two`, and the plan predicts it so.
pub fn groups_apart(server: Server, tp: u32, ep: u32, dp: u32) -> bool {
    let several = dp / ep_ranks(tp, ep) >= 2;
    several
        && (server == Server::Trtllm || (ep > 1 && (server == Server::Vllm || (server == Server::Sglang && ep != tp))))
}

/// Seconds between SGLang's router's polls of its workers' loads, which its
/// `power_of_two` compares, in the scripts that start it: its least, where
/// its default is 10.
pub const SGLANG_LOAD_POLL_S: u32 = 1;

/// The seconds between the polls of the loads `server`'s router compares
/// under `router`, as its script starts it: SGLang's `power_of_two`'s,
/// `None` for the others (vLLM router's adds its own live count to what it
/// polls, and vLLM reports no load unless asked: its live count decides).
pub fn router_poll_s(server: Server, router: RouterPolicy) -> Option<f64> {
    (server == Server::Sglang && router == RouterPolicy::PowerOfTwo).then_some(f64::from(SGLANG_LOAD_POLL_S))
}

/// [`router_poll_s`] of a configuration's `router` (the simulator's name or
/// the router's own), `None` where it names none.
pub fn params_router_poll_s(server: Server, params: &ParamMap) -> Option<f64> {
    router_poll_s(server, params.get("router")?.parse().ok()?)
}

/// A configuration's (TP, EP, PP, DP), each 1 where not given.
pub(crate) fn sizes(params: &ParamMap) -> (u32, u32, u32, u32) {
    let count = |k: &str| params.get(k).and_then(|v| v.trim().parse::<u32>().ok()).unwrap_or(1).max(1);
    (count("tp"), count("ep"), count("pp"), count("dp"))
}

/// The GPUs of one server of TP `tp`, EP `ep` and `pp` stages: its TP
/// group times its stages times its expert-parallel ranks.
fn server_gpus(tp: u32, ep: u32, pp: u32) -> u32 {
    tp.saturating_mul(pp).saturating_mul(ep_ranks(tp, ep))
}

/// One server's knobs of a configuration's: TP `tp`, EP `ep` (its ranks as
/// DP), no pools and no router.
fn one_server(params: &ParamMap, tp: u32, ep: u32) -> ParamMap {
    let mut one = params.clone();
    one.shift_remove("pd");
    one.shift_remove("router");
    one.insert("tp".into(), tp.to_string());
    one.insert("dp".into(), ep_ranks(tp, ep).to_string());
    match ep > 1 {
        true => drop(one.insert("ep".into(), ep.to_string())),
        false => drop(one.shift_remove("ep")),
    }
    one
}

impl Servers {
    /// The pools of a configuration with `pd` among its knobs; `None`
    /// without.
    fn pools(params: &ParamMap) -> Option<Result<Servers, String>> {
        let pd = params.get("pd")?.trim();
        let (tp, ep, pp, dp) = sizes(params);
        Some(Disaggregation::parse(pd).and_then(|d| {
            let units = (dp / ep_ranks(tp, ep)).max(1);
            let all = d.times(units);
            if all.prefill.saturating_add(all.decode) > MAX_INSTANCES {
                return Err(format!(
                    "prefill apart from decode ({pd}) over {units} units: more than {MAX_INSTANCES} servers"
                ));
            }
            let mut instances = Vec::new();
            for (role, (n, tp, ep)) in [Role::Prefill, Role::Decode].into_iter().zip(all.pools(tp, ep)) {
                let one = one_server(params, tp, ep);
                let gpus = server_gpus(tp, ep, pp);
                instances.extend((0..n).map(|_| (role, one.clone(), gpus)));
            }
            Ok(Servers { spec: Some(all.spec()), policy: None, instances })
        }))
    }

    /// The replicas of a configuration whose plan named a router that
    /// `server`'s own balancing of its data-parallel ranks is not: vLLM's
    /// sends each request to the rank of least waiting × 4 + running (the
    /// plan's least-loaded, near enough), SGLang's takes round-robin and
    /// least-loaded as `--load-balance-method` ([`flags`]); round-robin on
    /// vLLM, and prefix-aware and power-of-two on either, are replicas
    /// behind the router's `round_robin`, `cache_aware` or `power_of_two`
    /// policy. So are the replicas of an
    /// expert-parallel layout whose experts do not span every GPU of the
    /// server (vLLM's span TP × DP; SGLang's that or each replica's TP):
    /// each replica its own server, and least-loaded the router's
    /// `power_of_two` (of two replicas drawn, the one with fewer requests in
    /// flight: between two, always the less loaded). TensorRT-LLM's
    /// replicas are always servers of their own, behind SMG's router
    /// (`trtllm::command`), its policies named alike.
    fn replicas(server: Server, params: &ParamMap) -> Option<Servers> {
        let (tp, ep, pp, dp) = sizes(params);
        let units = dp / ep_ranks(tp, ep);
        if units < 2 || params.contains_key("pd") {
            return None;
        }
        let apart = groups_apart(server, tp, ep, dp);
        let router: RouterPolicy = match params.get("router") {
            Some(r) => r.parse().ok()?,
            None if apart => RouterPolicy::LeastLoaded,
            None => return None,
        };
        let policy = match (server, router, apart) {
            (Server::Vllm | Server::Sglang | Server::Trtllm, RouterPolicy::PrefixAware, _) => "cache_aware",
            (Server::Vllm | Server::Trtllm, RouterPolicy::RoundRobin, _)
            | (Server::Sglang, RouterPolicy::RoundRobin, true) => "round_robin",
            (Server::Vllm | Server::Sglang | Server::Trtllm, RouterPolicy::LeastLoaded, true)
            | (Server::Vllm | Server::Sglang | Server::Trtllm, RouterPolicy::PowerOfTwo, _) => "power_of_two",
            _ => return None,
        };
        let gpus = server_gpus(tp, ep, pp);
        let one = one_server(params, tp, ep);
        let instances = (0..units.min(MAX_INSTANCES)).map(|_| (Role::Replica, one.clone(), gpus)).collect();
        Some(Servers { spec: None, policy: Some(policy), instances })
    }

    /// The servers `server` starts a configuration as, where one command
    /// does not (`goodput serve` takes every layout in one): its pools, or
    /// its replicas behind the plan's router.
    fn of(server: Server, params: &ParamMap) -> Option<Result<Servers, String>> {
        match server {
            Server::Goodput => None,
            // Its own scripts start every layout (`trtllm::command`).
            Server::Trtllm => None,
            _ => Servers::pools(params).or_else(|| Servers::replicas(server, params).map(Ok)),
        }
    }

    fn count(&self, role: Role) -> usize {
        self.instances.iter().filter(|(r, _, _)| *r == role).count()
    }

    /// The GPUs all the servers take together.
    fn gpus(&self) -> u32 {
        self.instances.iter().map(|(_, _, g)| g).sum()
    }

    /// How many ports their script takes from `$PORT` on: the router's, a
    /// server's each, a NIXL side channel (or SGLang bootstrap server)
    /// each of a server's data-parallel ranks, and the router's metrics'.
    fn ports(&self) -> usize {
        let ranks: usize = self.instances.iter().map(|(_, params, _)| ranks(params)).sum();
        2 + self.instances.len() + ranks
    }
}

/// A server's data-parallel ranks (`dp`, 1 where not given).
fn ranks(params: &ParamMap) -> usize {
    sizes(params).3 as usize
}

/// The script that starts a configuration's servers on `server`
/// ([`ServeCommand::command`] where `script`): each on GPUs of its own,
/// the first of those `CUDA_VISIBLE_DEVICES` names where set, else from 0
/// (vLLM's by `CUDA_VISIBLE_DEVICES`, SGLang's by `--base-gpu-id`), none
/// started where fewer are named; between prefill and decode servers the KV cache
/// carried by NIXL (vLLM's `NixlConnector`, SGLang's
/// `--disaggregation-transfer-backend nixl`); once every server answers
/// /health, the router on `$PORT`: `vllm-router` (`--vllm-pd-disaggregation`
/// for pools, `--policy` for replicas), SGLang's `sglang_router.launch_router`
/// (`--pd-disaggregation`, or `--policy`). The servers listen on the ports
/// after it, vLLM's NIXL side channels (one a data-parallel rank) and
/// SGLang's bootstrap servers on
/// the ones after those, and the router's Prometheus metrics on the next
/// (both routers default to 29000, which the last configuration's router
/// may still hold). The script ends when any of its processes does, so
/// that a sweep sees the configuration fail, and ends its servers when it
/// ends or is interrupted.
fn servers_script(
    server: Server,
    servers: &Servers,
    weights: &Weights,
    drafter: Option<&Drafter>,
    named: &str,
    mem: Option<f64>,
) -> Result<String, String> {
    let n = servers.instances.len();
    let sglang = server == Server::Sglang;
    let gpus = servers.gpus();
    let router = if sglang { "SGLang's router" } else { "vllm-router" };
    let title = server.title();
    // SGLang's power_of_two: the loads it compares polled this often.
    let poll = servers.policy.and_then(|p| p.parse().ok()).and_then(|r| router_poll_s(server, r));
    let mut s = match servers.policy {
        None => format!(
            "# {} prefill and {} decode {title} servers on {gpus} GPUs, the KV cache carried by NIXL{}, behind \
             {router}, which picks each pool's server by its cache_aware policy (the one whose earlier prompts \
             share the most of this one's beginning, past 30 % of it; else the least loaded).\n",
            servers.count(Role::Prefill),
            servers.count(Role::Decode),
            if sglang { "" } else { " (NixlConnector)" }
        ),
        Some(policy) => format!(
            "# {n} {title} servers on {gpus} GPUs, behind {router}, which spreads requests over them by its \
             {policy} policy{}.\n",
            match (policy, poll) {
                // SGLang's compares the loads its monitor polls, 10 s apart
                // by default: between polls a pair's lighter one takes them
                // all.
                (_, Some(_)) => {
                    " (of two drawn at random, the one whose requests held fewer tokens, in its KV cache and \
                     waiting, at the last poll of the loads: every second here, where SGLang's default of 10 s \
                     piles a whole interval's requests on the same replicas)"
                }
                ("power_of_two", None) => " (of two drawn at random, the one with fewer requests in flight)",
                _ => "",
            }
        ),
    };
    s.push_str("# The router listens on $PORT (8000 when unset), the servers on the ports after it.\n");
    s.push_str(&servers_preamble(gpus, "", ""));
    let (mut first, mut urls, mut next_side) = (0u32, Vec::new(), n + 1);
    for (i, (role, params, used)) in servers.instances.iter().enumerate() {
        // A server of several data-parallel ranks takes a side channel for
        // each (vLLM's NIXL port is its base plus the rank).
        let (listen, side) = (i + 1, next_side);
        next_side += ranks(params);
        let mut words = serve_words(server, params, weights, drafter, named, mem)?;
        let mut tail = format!(" --host 127.0.0.1 --port $((port + {listen}))");
        let url = format!("http://127.0.0.1:$((port + {listen}))");
        let mut env = String::new();
        // vLLM's by their place among the visible ones (SGLang's --base-gpu-id
        // counts among them itself).
        if !sglang {
            env = format!("CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f{}-{}) ", first + 1, first + used);
        }
        match (role, sglang) {
            (Role::Replica, false) => urls.push(url),
            (Role::Replica, true) => {
                words.extend(["--base-gpu-id".into(), first.to_string()]);
                urls.push(url);
            }
            (role, false) => {
                let kv = if *role == Role::Decode { "kv_consumer" } else { "kv_producer" };
                let cfg = serde_json::json!({"kv_connector": "NixlConnector", "kv_role": kv});
                words.extend(["--kv-transfer-config".into(), cfg.to_string()]);
                env += &format!("VLLM_NIXL_SIDE_CHANNEL_PORT=$((port + {side})) ");
                let flag = if *role == Role::Decode { "--decode" } else { "--prefill" };
                urls.push(format!("{flag} {url}"));
            }
            (role, true) => {
                let mode = if *role == Role::Decode { "decode" } else { "prefill" };
                words.extend(["--disaggregation-mode".into(), mode.into()]);
                words.extend(["--disaggregation-transfer-backend".into(), "nixl".into()]);
                words.extend(["--base-gpu-id".into(), first.to_string()]);
                match role {
                    Role::Prefill => {
                        tail += &format!(" --disaggregation-bootstrap-port $((port + {side}))");
                        urls.push(format!("--prefill {url} $((port + {side}))"));
                    }
                    _ => urls.push(format!("--decode {url}")),
                }
            }
        }
        let _ = writeln!(s, "{env}{}{tail} &\npids=\"$pids $!\"", shell_words(&words));
        first += used;
    }
    s.push_str(&health_wait(n));
    let start = if sglang { "python3 -m sglang_router.launch_router" } else { "vllm-router" };
    let how = match (servers.policy, sglang) {
        (None, _) => {
            let pd = if sglang { "--pd-disaggregation" } else { "--vllm-pd-disaggregation" };
            format!("{pd} {} --policy cache_aware", urls.join(" "))
        }
        (Some(policy), _) => format!(
            "--worker-urls {} --policy {policy}{}",
            urls.join(" "),
            poll.map_or_else(String::new, |s| format!(" --worker-load-check-interval {s}"))
        ),
    };
    let _ = write!(
        s,
        "{start} {how} --host 127.0.0.1 --port \"$port\" --prometheus-port $((port + {})) &\npids=\"$pids $!\"\n{}",
        servers.ports() - 1,
        while_alive()
    );
    Ok(s)
}

/// A script of several servers' first lines: the port it takes (`$PORT`,
/// 8000 when unset), `setup` (lines of its own), the traps that end every
/// server with the script (and run `cleanup`), and the GPUs it takes: the
/// first `gpus` of `CUDA_VISIBLE_DEVICES` where set (a shared machine's
/// share), else every one from 0, the script ending at once where fewer
/// are named.
fn servers_preamble(gpus: u32, setup: &str, cleanup: &str) -> String {
    let all: Vec<String> = (0..gpus).map(|g| g.to_string()).collect();
    format!(
        "# The GPUs are the first {gpus} of CUDA_VISIBLE_DEVICES where it is set, else 0 to {}.\n\
         port=${{PORT:-8000}}\npids=\n{setup}\
         # The servers end with the script (Ctrl-C included: a script's background jobs ignore SIGINT).\n\
         trap 'kill $pids 2>/dev/null{cleanup}' EXIT\ntrap 'exit 1' INT TERM\nvisible=${{CUDA_VISIBLE_DEVICES:-{}}}\n\
         [ \"$(echo \"$visible\" | tr , '\\n' | grep -c .)\" -ge {gpus} ] || {{ echo \"these servers take {gpus} GPUs; \
         CUDA_VISIBLE_DEVICES=$visible names fewer\" >&2; exit 1; }}\n",
        gpus.saturating_sub(1),
        all.join(",")
    )
}

/// Ends the script where any of its servers (`$pids`) has ended.
const ALIVE: &str = "for q in $pids; do kill -0 \"$q\" 2>/dev/null || exit 1; done";

/// Waits until the `n` servers on the ports after `$port` answer /health,
/// ending the script where one of them ends first.
fn health_wait(n: usize) -> String {
    let listens: Vec<String> = (1..=n).map(|k| format!("$((port + {k}))")).collect();
    format!(
        "for p in {}; do\n  until python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], \
         timeout=5)' \"http://127.0.0.1:$p/health\" 2>/dev/null; do\n    {ALIVE}\n    sleep 2\n  done\ndone\n",
        listens.join(" ")
    )
}

/// The script's last lines: it lives while all its processes do.
fn while_alive() -> String {
    format!("while :; do\n  {ALIVE}\n  sleep 2\ndone\n")
}

/// The flags of a configuration's knobs on `server`, its weights loaded
/// as `loaded` and its drafts (if it drafts) by `drafter`; or why it has
/// none.
fn flags(
    server: Server,
    params: &ParamMap,
    loaded: Loaded,
    drafter: Option<&Drafter>,
    gpu_memory_utilization: Option<f64>,
) -> Result<Vec<String>, String> {
    let get = |k: &str| params.get(k).map(|v| v.trim());
    let count = |k: &str| get(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(1);
    let sglang = server == Server::Sglang;
    let title = server.title();
    let drafts = get("spec_tokens").and_then(|k| k.parse::<u32>().ok()).filter(|&k| k > 0);
    let drafts = match (drafts, drafter) {
        (None, _) => None,
        (Some(k), Some(d)) => Some(speculative_flags(server, d, k)),
        (Some(k), None) => {
            return Err(format!(
                "speculative decoding ({k} draft tokens): {title} needs the drafter named, and none is known here for \
                 these weights: give one as --serve-drafter eagle3=WEIGHTS (an EAGLE-3 head), draft=WEIGHTS (a \
                 smaller model) or mtp (the model's own layers); its acceptance decides the speed, and the plan \
                 assumed {}",
                get("spec_acceptance").unwrap_or("0.7")
            ))
        }
    };
    let mut flags = Vec::new();
    match loaded {
        Loaded::Bf16 => flags.extend(["--dtype".into(), "bfloat16".into()]),
        Loaded::Fp8OnLoad => flags.extend(["--quantization".into(), "fp8".into()]),
        Loaded::Checkpoint => {}
    }
    let mut flag = |f: &str, v: String| flags.extend([f.to_string(), v]);
    let (tp, dp, pp, ep) = (count("tp"), count("dp"), count("pp"), count("ep"));
    match (sglang, ep) {
        (_, 1) => {}
        (false, ep) if ep != tp.saturating_mul(dp) => {
            return Err(format!(
                "expert parallel over {ep} GPUs with TP {tp} × DP {dp}: vLLM's --enable-expert-parallel spreads the \
                 experts over all {} GPUs of TP × DP",
                tp.saturating_mul(dp)
            ))
        }
        (true, ep) if ep != tp && ep != tp.saturating_mul(dp) => {
            return Err(format!(
                "expert parallel over {ep} GPUs with TP {tp} × DP {dp}: SGLang's --ep-size spreads the experts over \
                 each replica's TP group, or with its DP attention over all {} GPUs of TP × DP",
                tp.saturating_mul(dp)
            ))
        }
        _ => {}
    }
    // SGLang's DP attention: the data-parallel ranks' attention apart and
    // their experts over all of them, as vLLM's DP ranks with
    // --enable-expert-parallel; its --tp-size counts every GPU of the
    // server, each rank's attention on TP of them.
    let dp_attention = sglang && ep > 1 && dp > 1 && ep != tp;
    let names = match sglang {
        false => ["--tensor-parallel-size", "--pipeline-parallel-size", "--data-parallel-size"],
        true => ["--tp-size", "--pp-size", "--dp-size"],
    };
    let width = if dp_attention { tp.saturating_mul(dp) } else { tp };
    for (f, n) in names.into_iter().zip([width, pp, dp]) {
        if n > 1 {
            flag(f, n.to_string());
        }
    }
    // SGLang balances its replicas by the plan's router where it has that
    // policy (prefix-aware is replicas behind its router: Servers::replicas),
    // else by the plan's `load_balance_method` where no router is named (a
    // closed loop's, SGLang's round-robin). The ranks of its DP attention
    // take the plan's `load_balance_method` (below).
    let router = get("router").and_then(|r| r.parse::<RouterPolicy>().ok());
    let method = match router {
        Some(r) => sglang_replicas_method(r).map(LoadBalance::sglang_name),
        None => get("load_balance_method").map(|m| m.trim().to_string()),
    };
    if let Some(m) = method.filter(|_| sglang && dp > 1 && !dp_attention) {
        flag("--load-balance-method", m);
    }
    if ep > 1 {
        match sglang {
            false => flags.push("--enable-expert-parallel".into()),
            true if dp_attention => flags.extend(["--enable-dp-attention".into(), "--ep-size".into(), ep.to_string()]),
            true => flags.extend(["--ep-size".into(), ep.to_string()]),
        }
    }
    // The method that picks among the ranks of its DP attention, as plan
    // searched it (`--load-balance-method`); a pool without ranks (an
    // instance of one) keeps SGLang's default.
    if let Some(m) = get("load_balance_method").filter(|_| dp_attention) {
        flags.extend(["--load-balance-method".into(), m.trim().to_string()]);
    }
    let mut flag = |f: &str, v: String| flags.extend([f.to_string(), v]);
    if get("kv_cache_dtype").is_some_and(|v| v.eq_ignore_ascii_case("fp8")) {
        flag("--kv-cache-dtype", if sglang { "fp8_e4m3" } else { "fp8" }.into());
    }
    let (seqs, tokens, memory) = match sglang {
        false => ("--max-num-seqs", "--max-num-batched-tokens", "--gpu-memory-utilization"),
        true => ("--max-running-requests", "--chunked-prefill-size", "--mem-fraction-static"),
    };
    if let Some(v) = get("max_num_seqs") {
        flag(seqs, v.to_string());
    }
    if let Some(v) = get("max_num_batched_tokens") {
        flag(tokens, v.to_string());
    }
    // Where none was given, the server's own default, as the plan took it
    // (SGLang's set for the configuration, vLLM's 0.9).
    if let Some(share) = gpu_memory_utilization {
        flag(memory, share.to_string());
    }
    // A prompt chunk beside the running decodes: vLLM's way always,
    // SGLang's when asked (plan's `--mixed-chunk on`; off by default).
    let mixed = get("mixed_batches").and_then(goodput_core::doc::overlay::switch_value);
    if sglang && mixed == Some(true) {
        flags.push("--enable-mixed-chunk".into());
    }
    // A step ahead, both servers' default (vLLM's since 0.14, which leaves
    // it off with pipeline parallelism): named where the plan says.
    match get("async_scheduling").and_then(goodput_core::doc::overlay::switch_value) {
        Some(false) if sglang => flags.push("--disable-overlap-schedule".into()),
        Some(false) => flags.push("--no-async-scheduling".into()),
        Some(true) if !sglang => flags.push("--async-scheduling".into()),
        _ => {}
    }
    // SGLang serves /metrics only when asked: the sweep reads the server's
    // own signals there.
    if sglang {
        flags.push("--enable-metrics".into());
    }
    flags.extend(drafts.unwrap_or_default());
    Ok(flags)
}

/// SGLang's `--load-balance-method` for the router a plan puts in front of a
/// dense model's replicas, where one server of `--dp-size` balances them
/// itself: round-robin is its `round_robin`, least-loaded its
/// `total_requests` (the fewest running and waiting requests;
/// `shortest_queue`, the older name, is no longer one of its choices, and a
/// server given it refuses to start). `None` for the others, which are
/// replicas behind SGLang's router ([`Servers::replicas`]).
pub fn sglang_replicas_method(router: RouterPolicy) -> Option<LoadBalance> {
    match router {
        RouterPolicy::RoundRobin => Some(LoadBalance::RoundRobin),
        RouterPolicy::LeastLoaded => Some(LoadBalance::TotalRequests),
        _ => None,
    }
}

/// Words joined as a POSIX shell reads them back.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.replace('\0', ""), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `vllm serve WEIGHTS` or `python3 -m sglang.launch_server --model-path
/// WEIGHTS` (the weights at the configuration's width), then
/// `--served-model-name NAMED` (where it differs) and the knobs' flags, its
/// drafts by `drafter` ([`Weights::drafter`]): the command's words.
fn serve_words(
    server: Server,
    params: &ParamMap,
    weights: &Weights,
    drafter: Option<&Drafter>,
    named: &str,
    mem: Option<f64>,
) -> Result<Vec<String>, String> {
    let precision = match params.get("precision").map(|v| v.trim()) {
        None => Precision::Bf16,
        Some(v) => v.parse().map_err(|_| format!("precision {v}: no {} flag is known for it", server.title()))?,
    };
    // AMD's GPUs load FP4 as MXFP4 ([`Weights::at`]).
    let amd = params.get("gpu").and_then(|g| GpuSpec::lookup(g).ok()).is_some_and(|g| g.family.is_amd());
    let (served, loaded) = match server {
        Server::Goodput => (named.to_string(), Loaded::Bf16),
        _ => weights.at(precision, server, amd)?,
    };
    let served = served.as_str();
    let (env, experts) = mxfp4_switch(server, params)?;
    let mut words: Vec<String> = match server {
        // Its environment through env(1): a word that also follows `exec`.
        Server::Vllm if !env.is_empty() => {
            ["env"].into_iter().chain(env).chain(["vllm", "serve", served]).map(String::from).collect()
        }
        Server::Vllm => vec!["vllm".into(), "serve".into(), served.into()],
        Server::Sglang => {
            vec!["python3".into(), "-m".into(), "sglang.launch_server".into(), "--model-path".into(), served.into()]
        }
        // Its flags; the options it takes from a file are the script's
        // (`trtllm::options`).
        Server::Trtllm => {
            let mut w: Vec<String> = vec!["trtllm-serve".into(), served.into(), "--backend".into(), "pytorch".into()];
            if named != served {
                w.extend(["--served_model_name".into(), named.to_string()]);
            }
            w.extend(trtllm::flags(params)?);
            return Ok(w);
        }
        // This binary, where it can be found: the grid is run on this machine.
        Server::Goodput => {
            let exe = std::env::current_exe().map_or_else(|_| "goodput".into(), |p| p.display().to_string());
            let mut w: Vec<String> = vec![exe, "serve".into(), "--profile".into(), "engine".into()];
            // Named as the sweep's requests name it (it serves the catalog's name otherwise).
            w.extend(["--model".into(), named.into(), "--served-model-name".into(), named.into(), "-q".into()]);
            w.extend(goodput_flags(params, mem)?);
            return Ok(w);
        }
    };
    if named != served {
        words.extend(["--served-model-name".into(), named.to_string()]);
    }
    words.extend(flags(server, params, loaded, drafter, mem)?);
    words.extend(experts.into_iter().map(String::from));
    Ok(words)
}

/// The server's own switch for what an MXFP4 mixture of experts' experts
/// multiply against, where the plan searched it (`mxfp4_activations`):
/// environment assignments and flags, nothing where the kind is the
/// server's default, or why no switch is known.
///
/// - vLLM: 16-bit by default (FlashInfer's MXFP4 × BF16 on Blackwell,
///   Triton's on ROCm); FP8 activations on Blackwell by
///   `VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1`. None known on AMD's GPUs.
/// - SGLang: FP8 by default on Blackwell (its FlashInfer MXFP4 kernel's
///   `default` precision quantizes to MXFP8); 16-bit by
///   `--flashinfer-mxfp4-moe-precision bf16`. Its switch on AMD's GPUs is
///   not known here.
/// - TensorRT-LLM: FP8 on Blackwell (its TRTLLM MoE backend's MXFP8);
///   no option known here keeps them 16-bit.
/// - goodput's own server takes `--mxfp4-activations` ([`goodput_flags`]).
fn mxfp4_switch(server: Server, params: &ParamMap) -> Result<(Vec<&'static str>, Vec<&'static str>), String> {
    use goodput_sim::engine::Mxfp4Activations::{Bf16, Fp8};
    let Some(a) = params.get("mxfp4_activations").and_then(|v| v.parse().ok()) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let gpu = params.get("gpu").and_then(|g| GpuSpec::lookup(g).ok());
    let (name, amd) = gpu.map_or(("this GPU".to_string(), false), |g| (g.name.clone(), g.family.is_amd()));
    match (server, a, amd) {
        (Server::Goodput, ..) | (Server::Vllm, Bf16, _) | (Server::Sglang | Server::Trtllm, Fp8, _) => {
            Ok((Vec::new(), Vec::new()))
        }
        (Server::Vllm, Fp8, false) => Ok((vec!["VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1"], Vec::new())),
        (Server::Sglang, Bf16, false) => Ok((Vec::new(), vec!["--flashinfer-mxfp4-moe-precision", "bf16"])),
        (Server::Vllm, Fp8, true) => Err(format!(
            "MXFP4 experts against FP8 activations (W4A8) on the {name}: no vLLM switch for it is known here (its \
             ROCm kernels run them against 16-bit ones, AITER's A16W4 as InferenceMAX sets it): plan it with \
             --mxfp4-activations bf16"
        )),
        (Server::Sglang, Bf16, true) => Err(format!(
            "MXFP4 experts against 16-bit activations (W4A16) on the {name}: SGLang's switch for it there is not \
             known here (its --flashinfer-mxfp4-moe-precision is FlashInfer's, on NVIDIA's GPUs): plan it with \
             --mxfp4-activations fp8, or under --serve-engine vllm"
        )),
        (Server::Trtllm, Bf16, _) => Err(format!(
            "MXFP4 experts against 16-bit activations (W4A16) on the {name}: TensorRT-LLM's MoE backend on Blackwell \
             (TRTLLM) multiplies them against MXFP8 ones, and no option that keeps them 16-bit is known here: plan \
             it with --mxfp4-activations fp8, or under --serve-engine vllm"
        )),
    }
}

/// Sets each configuration's `serve_command`: `server`'s, loading
/// `weights` at the configuration's width, under the name `named` (the
/// plan's --model, which the requests of a sweep then give).
pub fn set_commands(doc: &mut FrontierResult, server: Server, weights: &Weights, named: &str, mem: Option<f64>) {
    // Settled once: it is every configuration's.
    let drafter = weights.drafter();
    for c in &mut doc.configs {
        // TensorRT-LLM's command is always a script: its options file first.
        let (started, script) = match (server, Servers::of(server, &c.params)) {
            (Server::Trtllm, _) => (trtllm::command(&c.params, weights, drafter.as_ref(), named, mem), true),
            (_, Some(servers)) => {
                (servers.and_then(|s| servers_script(server, &s, weights, drafter.as_ref(), named, mem)), true)
            }
            (_, None) => {
                (serve_words(server, &c.params, weights, drafter.as_ref(), named, mem).map(|w| shell_words(&w)), false)
            }
        };
        let script = script && started.is_ok();
        let (command, missing) = match started {
            Ok(command) => (Some(command), None),
            Err(why) => (None, Some(why)),
        };
        c.serve_command = Some(ServeCommand { server: server.name().into(), command, script, missing });
    }
}

/// One grid `plan --grid-out` wrote.
#[derive(Debug)]
pub struct Grid {
    pub path: PathBuf,
    pub gpu: String,
    /// The configurations in it.
    pub configs: usize,
    /// The frontier's configurations of this GPU left out, each with why.
    pub left_out: Vec<String>,
    /// The sweep that measures it; none where no configuration of this GPU
    /// has one command.
    pub sweep: Option<String>,
}

/// The configurations with a point on either frontier, or the best point.
fn on_the_frontier(doc: &FrontierResult) -> BTreeSet<usize> {
    doc.frontier.iter().chain(&doc.frontier_per_usd).chain(doc.best.as_ref().map(|b| &b.at)).map(|p| p.config).collect()
}

/// Whether one command starts the configuration.
fn startable(c: &FrontierConfig) -> bool {
    c.serve_command.as_ref().is_some_and(|s| s.command.is_some())
}

/// The configurations on the frontier of those one command starts (and
/// the best of them): where the plan's frontier holds some that none does
/// (a drafter to name, a quantized checkpoint, separate pools), the
/// nearest that can be measured, so that a grid is never left empty while
/// any configuration can be started.
fn startable_frontier(doc: &FrontierResult) -> BTreeSet<usize> {
    let mut only = doc.clone();
    for c in only.configs.iter_mut().filter(|c| !startable(c)) {
        c.points.clear();
    }
    goodput_core::doc::frontier::analyze_frontier(&mut only);
    on_the_frontier(&only)
}

/// `grid.toml` for one GPU type among several: `grid-h100-sxm.toml`.
fn grid_path(out: &Path, gpu: &str, several: bool) -> PathBuf {
    if !several {
        return out.to_path_buf();
    }
    let stem = out.file_stem().map_or_else(|| "grid".into(), |s| s.to_string_lossy().into_owned());
    let ext = out.extension().map_or_else(|| "toml".into(), |e| e.to_string_lossy().into_owned());
    let slug: String = gpu.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    out.with_file_name(format!("{stem}-{slug}.{ext}"))
}

/// The plan's workload as sweep's flags (the lengths, preset, dataset,
/// shared prefix and --ignore-eos that plan and sweep both take).
pub fn workload_flags(w: &crate::cli::WorkloadArgs) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(p) = w.preset {
        if let Some(v) = clap::ValueEnum::to_possible_value(&p) {
            f.extend(["--preset".into(), v.get_name().to_string()]);
        }
    }
    if let Some(d) = &w.dataset {
        f.extend(["--dataset".into(), d.display().to_string()]);
    }
    if let Some(c) = &w.dataset_column {
        f.extend(["--dataset-column".into(), c.clone()]);
    }
    if let Some(t) = &w.tokenizer {
        f.extend(["--tokenizer".into(), t.display().to_string()]);
    }
    if let Some(i) = &w.input_tokens {
        f.extend(["--input-tokens".into(), i.to_string()]);
    }
    if let Some(o) = &w.output_tokens {
        f.extend(["--output-tokens".into(), o.to_string()]);
    }
    if w.shared_prefix_tokens > 0 {
        f.extend(["--shared-prefix-tokens".into(), w.shared_prefix_tokens.to_string()]);
        f.extend(["--shared-prefix-ratio".into(), w.shared_prefix_ratio.to_string()]);
        f.extend(["--shared-prefixes".into(), w.shared_prefixes.to_string()]);
    }
    if w.ignore_eos {
        f.push("--ignore-eos".into());
    }
    f
}

/// The trace a plan replayed, as its sweep replays it.
pub struct TraceContext<'a> {
    pub path: &'a Path,
    /// `--trace-format`, where the plan was given one.
    pub format: Option<String>,
    /// The requests per second it offers at speed 1 (as
    /// [`crate::setup::trace_rate`] gives it): a point's load over this is
    /// its speed. `None` where every request comes at once.
    pub rate: Option<f64>,
    /// The plan's `-n` and `--warmup` requests, which cut the trace short
    /// (and set its rate).
    pub requests: Option<u64>,
    pub warmup: u64,
}

/// What the sweep needs beside the grid: the plan's model name, workload
/// flags and SLO, and where the plan was written.
pub struct SweepContext<'a> {
    pub named: &'a str,
    pub workload: Vec<String>,
    /// The trace the plan replayed, which the sweep replays at the speeds
    /// of the grid's points.
    pub trace: Option<TraceContext<'a>>,
    pub plan_output: Option<&'a Path>,
}

/// A configuration's grid table: its id, its knobs as plan named them (the
/// router among them, which its launch carries and the sweep's `--estimate`
/// reads; the drafts' acceptance and cost left out, which the sweep's
/// flags give),
/// `launch`, the script that starts vLLM on the port `sh -c` passes it as
/// `$0` (a script of several servers takes it as `$PORT`), and for a script
/// of several servers their `metrics` and the `ports` they take.
fn table(c: &FrontierConfig, command: &str) -> String {
    let mut t = String::from("[[config]]\n");
    let value = |v: &str| match v.parse::<u64>() {
        Ok(n) => n.to_string(),
        Err(_) => toml::Value::String(v.to_string()).to_string(),
    };
    let _ = writeln!(t, "id = {}", toml::Value::String(c.id.clone()));
    for (k, v) in &c.params {
        // Not knobs of a grid: the sweep's --spec-acceptance and
        // --spec-draft-cost carry the drafts' (sweep_command).
        if !matches!(k.as_str(), "spec_acceptance" | "spec_draft_cost") {
            let _ = writeln!(t, "{k} = {}", value(v));
        }
    }
    let script = c.serve_command.as_ref().is_some_and(|s| s.script);
    // Several servers: the sweep reads each one's metrics, not the router's.
    let server = c
        .serve_command
        .as_ref()
        .filter(|s| s.script)
        .and_then(|s| <Server as clap::ValueEnum>::from_str(&s.server, true).ok());
    if let Some(Ok(s)) = server.and_then(|server| Servers::of(server, &c.params)) {
        let urls: Vec<String> =
            (1..=s.instances.len()).map(|k| format!("http://127.0.0.1:{{port+{k}}}/metrics")).collect();
        let _ = writeln!(t, "metrics = {}", toml::Value::String(urls.join(" ")));
        // The sweep starts it where all of them are free.
        let _ = writeln!(t, "ports = {}", s.ports());
    }
    // TensorRT-LLM's Prometheus text is at /prometheus/metrics (its
    // /metrics is JSON), each server's where there are several.
    if server == Some(Server::Trtllm) {
        let (urls, ports) = trtllm::endpoints(&c.params);
        let _ = writeln!(t, "metrics = {}", toml::Value::String(urls.join(" ")));
        if ports > 1 {
            let _ = writeln!(t, "ports = {ports}");
        }
    }
    let launch = match script {
        false => format!("exec {command} --host 127.0.0.1 --port \"$0\""),
        true => format!("PORT=\"$0\"\n{command}"),
    };
    // A script of several lines as lines: TOML's literal string of many
    // lines holds it as written, where it holds no three single quotes.
    match script && !launch.contains("'''") && !launch.chars().any(|c| c.is_control() && c != '\n') {
        true => drop(writeln!(t, "launch = '''\n{launch}'''")),
        false => drop(writeln!(t, "launch = {}", toml::Value::String(launch))),
    }
    t
}

/// Writes the frontier's configurations to `out` (one file per GPU type
/// where there are several: `out`'s name with the type), each with vLLM's
/// command in `launch`, and a header with the sweep that measures them.
pub fn write_grids(doc: &FrontierResult, out: &Path, cx: &SweepContext) -> Result<Vec<Grid>> {
    let planned = on_the_frontier(doc);
    let chosen: BTreeSet<usize> = planned.union(&startable_frontier(doc)).copied().collect();
    if planned.is_empty() {
        bail!(
            "--grid-out: the plan has no frontier (no configuration completed a request), so there is no grid to write"
        );
    }
    let mut gpus: Vec<String> = Vec::new();
    for &i in &chosen {
        let g = doc.configs[i].params.get("gpu").cloned().unwrap_or_default();
        if !gpus.contains(&g) {
            gpus.push(g);
        }
    }
    let several = gpus.len() > 1;
    let mut grids = Vec::new();
    for gpu in gpus {
        let path = grid_path(out, &gpu, several);
        let mine: Vec<(usize, &FrontierConfig)> = chosen
            .iter()
            .map(|&i| (i, &doc.configs[i]))
            .filter(|(_, c)| c.params.get("gpu").map_or("", String::as_str) == gpu)
            .collect();
        let mut tables = Vec::new();
        let mut left_out = Vec::new();
        let mut loads = BTreeSet::new();
        let mut rates: Vec<f64> = Vec::new();
        let mut own_balance = false;
        let mut own_predicted = false;
        for (i, c) in &mine {
            let sc = c.serve_command.as_ref();
            match sc.and_then(|s| s.command.as_deref()) {
                Some(cmd) => {
                    let which = match planned.contains(i) {
                        true => "# on the plan's frontier\n".to_string(),
                        false => format!("# on the frontier of what one {} command starts\n", server_title(doc)),
                    };
                    tables.push(which + &table(c, cmd));
                    for p in &c.points {
                        match p.load {
                            Load::Concurrency(n) => drop(loads.insert(n)),
                            Load::Rate(r) => rates.push(r),
                        }
                    }
                    // vLLM's own balancing stands for least-loaded; every
                    // other router is the server's flag or a script's.
                    let own = sc.is_some_and(|s| s.server == "vllm" && !s.script);
                    let least = c.params.get("router").is_some_and(|r| r.trim() == "least-loaded");
                    let internal =
                        c.params.get("internal_lb").and_then(|v| goodput_core::doc::overlay::switch_value(v));
                    own_balance |= own && (least || internal == Some(true));
                    own_predicted |= own && internal == Some(true);
                }
                None if !planned.contains(i) => {}
                None => left_out.push(format!(
                    "{}: {}",
                    c.id,
                    sc.and_then(|s| s.missing.as_deref()).unwrap_or("no command")
                )),
            }
        }
        let price = mine.iter().find_map(|(_, c)| c.gpu_hour_usd);
        // One plan drafts at one acceptance and cost.
        let drafts = mine.iter().filter(|(_, c)| startable(c)).find_map(|(_, c)| {
            Some((c.params.get("spec_acceptance")?.as_str(), c.params.get("spec_draft_cost")?.as_str()))
        });
        // The plan's best point, where its configuration is in this grid.
        let best = doc
            .best
            .as_ref()
            .filter(|b| mine.iter().any(|(i, c)| *i == b.at.config && startable(c)))
            .and_then(|b| doc.configs[b.at.config].points.get(b.at.point))
            .map(|p| p.load);
        let loads = Loads { users: &loads, rates: &rates, best };
        // SGLang's power_of_two compares the loads its script has it poll:
        // --estimate predicts it on the same polls.
        let poll = mine.iter().find_map(|(_, c)| {
            let server = <Server as clap::ValueEnum>::from_str(&c.serve_command.as_ref()?.server, false).ok()?;
            params_router_poll_s(server, &c.params)
        });
        let sweep =
            (!tables.is_empty()).then(|| sweep_command(&path, cx, loads, doc.slo.as_deref(), price, drafts, poll));
        // A header line is a comment to its end: a line break in a name
        // (a model's, a path's) would end it and start TOML.
        let comment = |t: &str| t.chars().map(|c| if c.is_control() { '?' } else { c }).collect::<String>();
        let mut text = comment(&format!(
            "# goodput plan's frontier for {} on {gpu}: {} configuration{}, each started with {} (launch).",
            doc.model,
            tables.len(),
            if tables.len() == 1 { "" } else { "s" },
            server_title(doc)
        ));
        text.push('\n');
        if let Some(sweep) = &sweep {
            let _ =
                writeln!(text, "# Measure them on a machine with these GPUs, and set the measurement beside the plan:");
            let _ = writeln!(text, "#   {}", comment(sweep));
        }
        if let Some(plan) = cx.plan_output.filter(|_| sweep.is_some()) {
            let measured = measured_path(&path);
            let words = [plan.display().to_string(), measured.display().to_string()];
            let _ = writeln!(text, "#   goodput compare {}", comment(&shell_words(&words)));
        }
        match &cx.trace {
            Some(t) if t.rate.is_some() => {
                let _ =
                    writeln!(text, "# The plan replayed a trace: the sweep replays it at the speeds of its points.");
            }
            Some(_) => {
                let _ = writeln!(
                    text,
                    "# The plan replayed a trace whose requests all come at once: give the sweep the loads to measure \
                     (--concurrency or --rate) where the plan's points are."
                );
            }
            None => {}
        }
        // A plan names the drafts' acceptance on the configurations that draft alone.
        if let Some((acceptance, _)) = drafts {
            let _ = writeln!(
                text,
                "# The drafting configurations' speed rests on the drafts' acceptance the plan assumed ({acceptance}): \
                 goodput compare sets the server's own counters against it (drafts)."
            );
        }
        if own_balance {
            let _ = writeln!(
                text,
                "# vLLM balances its data-parallel ranks itself, each request to the rank of least waiting × 4 + \
                 running requests: {}",
                if own_predicted && cx.trace.is_some() {
                    "the plan predicted it so (internal_lb = true)."
                } else if own_predicted {
                    "the plan's closed loops split the users evenly over the ranks, as it keeps alike users; the \
                     sweep's --estimate runs its rule (internal_lb = true)."
                } else {
                    "it stands for the plan's least-loaded router."
                }
            );
        }
        if !left_out.is_empty() {
            let _ = writeln!(text, "# Left out, with no one {} command:", server_title(doc));
            for l in &left_out {
                let _ = writeln!(text, "#   {}", comment(l));
            }
        }
        for t in &tables {
            text.push('\n');
            text.push_str(t);
        }
        if tables.is_empty() {
            let _ = writeln!(
                text,
                "\n# No configuration of this GPU has one {} command: the file has none to sweep.",
                server_title(doc)
            );
        }
        goodput_report::write_atomic(&path, text.trim_end().as_bytes())
            .with_context(|| format!("--grid-out: writing {}", path.display()))?;
        grids.push(Grid { path, gpu, configs: tables.len(), left_out, sweep });
    }
    Ok(grids)
}

/// The server the document's commands start, as prose names it.
fn server_title(doc: &FrontierResult) -> &str {
    doc.configs.iter().find_map(|c| c.serve_command.as_ref()).map_or("vLLM", |s| s.server_title())
}

/// `grid.toml` → `grid.measured.json`.
fn measured_path(grid: &Path) -> PathBuf {
    let stem = grid.file_stem().map_or_else(|| "grid".into(), |s| s.to_string_lossy().into_owned());
    grid.with_file_name(format!("{stem}.measured.json"))
}

/// The loads of a grid's points: closed loops' users, and a trace's
/// offered rates.
#[derive(Clone, Copy)]
struct Loads<'a> {
    users: &'a BTreeSet<u64>,
    rates: &'a [f64],
    /// The plan's best point's load, where its configuration is in the
    /// grid: kept however many loads are thinned away, as the point the
    /// measurement is first for.
    best: Option<Load>,
}

/// The speeds a trace offering `rate` requests/s at speed 1 is replayed at
/// to offer `rates` (at most eight, as [`thin`] keeps them, the speed that
/// offers `best` among them), each to six significant figures.
fn trace_speeds(rates: &[f64], rate: f64, best: Option<f64>) -> Vec<String> {
    let speed = |r: f64| Some(r / rate).filter(|s| s.is_finite() && *s > 0.0);
    let mut speeds: Vec<f64> = rates.iter().filter_map(|&r| speed(r)).collect();
    speeds.sort_by(f64::total_cmp);
    speeds.dedup_by(|a, b| (*a - *b).abs() <= 1e-9 * b.abs());
    let best = best.and_then(speed).and_then(|b| speeds.iter().position(|s| (s - b).abs() <= 1e-9 * b));
    thin(&speeds, best).iter().map(|s| format!("{}", (s * 1e6).round() / 1e6)).collect()
}

/// The sweep of one grid: its servers started by `sh -c {launch} {port}`,
/// the plan's workload and SLO, the loads of the plan's points (a trace's
/// speeds where the plan replayed one), and --estimate, which predicts the
/// same grid again and compares (`poll`: the seconds between the polls of
/// the loads SGLang's power_of_two compares, as its scripts start it).
fn sweep_command(
    grid: &Path,
    cx: &SweepContext,
    loads: Loads,
    slo: Option<&str>,
    price: Option<f64>,
    drafts: Option<(&str, &str)>,
    poll: Option<f64>,
) -> String {
    let mut w: Vec<String> = ["goodput", "sweep", "--serve-cmd", "sh -c {launch} {port}", "--serve-grid"]
        .into_iter()
        .map(String::from)
        .collect();
    w.push(grid.display().to_string());
    w.extend(["--model".into(), cx.named.to_string()]);
    // A config.json (or its folder) is the engine's model only where named
    // as one: --model is looked up in the catalog.
    if Path::new(cx.named).exists() {
        w.extend(["--sim-model".into(), cx.named.to_string()]);
    }
    match &cx.trace {
        None if !loads.users.is_empty() => {
            let all: Vec<u64> = loads.users.iter().copied().collect();
            let best = match loads.best {
                Some(Load::Concurrency(n)) => all.iter().position(|&u| u == n),
                _ => None,
            };
            let list: Vec<String> = thin(&all, best).iter().map(u64::to_string).collect();
            w.extend(["--concurrency".into(), list.join(",")]);
        }
        Some(TraceContext { path, format, rate: Some(rate), requests, warmup }) => {
            w.extend(["--trace".into(), path.display().to_string()]);
            if let Some(f) = format {
                w.extend(["--trace-format".into(), f.clone()]);
            }
            if let Some(n) = requests {
                w.extend(["-n".into(), n.to_string()]);
            }
            if *warmup > 0 {
                w.extend(["--warmup".into(), warmup.to_string()]);
            }
            let best = match loads.best {
                Some(Load::Rate(r)) => Some(r),
                _ => None,
            };
            let speeds = trace_speeds(loads.rates, *rate, best);
            if !speeds.is_empty() {
                w.extend(["--trace-speed".into(), speeds.join(",")]);
            }
        }
        _ => {}
    }
    w.extend(cx.workload.iter().cloned());
    if let Some(s) = slo {
        w.extend(["--slo".into(), s.to_string()]);
    }
    if let Some(p) = price {
        w.extend(["--gpu-hour-usd".into(), p.to_string()]);
    }
    // The drafting configurations' acceptance and cost, for --estimate to
    // predict them as the plan did.
    if let Some((acceptance, cost)) = drafts {
        w.extend(["--spec-acceptance".into(), acceptance.into(), "--spec-draft-cost".into(), cost.into()]);
    }
    if let Some(s) = poll {
        w.extend(["--router-poll".into(), format!("{s}s")]);
    }
    w.extend(["--estimate".into(), "-o".into(), measured_path(grid).display().to_string()]);
    shell_words(&w)
}

/// At most eight loads, the least and the most kept, and `keep` (the index
/// of the plan's best point's load) in place of the one nearest it, the
/// rest spread evenly among them: each load is every configuration's
/// point, and each point of a 70B's server takes minutes.
fn thin<T: Copy + PartialEq>(all: &[T], keep: Option<usize>) -> Vec<T> {
    if all.len() <= 8 {
        return all.to_vec();
    }
    let last = all.len() - 1;
    let mut at: Vec<usize> = (0..8).map(|k| k * last / 7).collect();
    if let Some(j) = keep.filter(|j| *j <= last && !at.contains(j)) {
        // An inner one: the ends stay.
        if let Some(n) = (1..7).min_by_key(|&n| at[n].abs_diff(j)) {
            at[n] = j;
        }
        at.sort_unstable();
    }
    at.dedup();
    at.into_iter().map(|i| all[i]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> ParamMap {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The weights `served` at 16 bits, nothing given beside them.
    fn weights(served: &str) -> Weights {
        Weights { served: Some(served.into()), ..Weights::default() }
    }

    /// A configuration's command, or why it has none.
    fn command(server: Server, kv: &[(&str, &str)], w: &Weights) -> Result<String, String> {
        serve_words(server, &params(kv), w, w.drafter().as_ref(), "named", Some(0.9)).map(|words| shell_words(&words))
    }

    #[test]
    fn a_configuration_is_vllm_flags_or_the_reason_it_has_none() {
        let p = params(&[
            ("gpu", "h100-sxm"),
            ("tp", "2"),
            ("dp", "2"),
            ("precision", "fp8"),
            ("kv_cache_dtype", "fp8"),
            ("max_num_seqs", "256"),
            ("max_num_batched_tokens", "8192"),
        ]);
        let w = serve_words(
            Server::Vllm,
            &p,
            &weights("meta-llama/Llama-3.1-70B-Instruct"),
            None,
            "llama-3.1-70b",
            Some(0.9),
        )
        .unwrap();
        assert_eq!(
            shell_words(&w),
            "vllm serve meta-llama/Llama-3.1-70B-Instruct --served-model-name llama-3.1-70b --quantization fp8 \
             --tensor-parallel-size 2 --data-parallel-size 2 --kv-cache-dtype fp8 --max-num-seqs 256 \
             --max-num-batched-tokens 8192 --gpu-memory-utilization 0.9"
        );
        // BF16 names its dtype; a served name equal to the weights' is not repeated; one GPU has no TP flag.
        let p = params(&[("tp", "1"), ("dp", "1"), ("precision", "bf16"), ("kv_cache_dtype", "auto")]);
        assert_eq!(
            shell_words(
                &serve_words(
                    Server::Vllm,
                    &p,
                    &weights("Qwen/Qwen2.5-7B-Instruct"),
                    None,
                    "Qwen/Qwen2.5-7B-Instruct",
                    Some(0.85)
                )
                .unwrap()
            ),
            "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16 --gpu-memory-utilization 0.85"
        );
        // Experts over every TP × DP GPU is vLLM's one layout.
        let ep = params(&[("tp", "1"), ("dp", "8"), ("ep", "8"), ("pp", "2"), ("precision", "fp8")]);
        let w = serve_words(Server::Vllm, &ep, &weights("x"), None, "x", Some(0.9)).unwrap();
        assert!(w.contains(&"--enable-expert-parallel".to_string()) && w.contains(&"--pipeline-parallel-size".into()));
        let why = |kv: &[(&str, &str)]| command(Server::Vllm, kv, &weights("my-org/tuned")).unwrap_err();
        assert!(why(&[("tp", "1"), ("dp", "8"), ("ep", "4")]).contains("all 8 GPUs of TP × DP"));
        assert!(why(&[("precision", "fp4")]).contains("NVFP4 checkpoint"));
        assert!(why(&[("precision", "int4")]).contains("AWQ or GPTQ"));
        assert!(why(&[("spec_tokens", "3"), ("spec_acceptance", "0.6")]).contains("assumed 0.6"));
        // No draft tokens is no drafting.
        assert!(command(Server::Vllm, &[("spec_tokens", "0")], &weights("my-org/tuned")).is_ok());
    }

    /// SGLang's flags for the same knobs, and its own reasons.
    #[test]
    fn each_server_is_told_its_mxfp4_experts_activations_or_why_not() {
        let w = Weights { width: Some(Precision::Mxfp4), ..weights("openai/gpt-oss-120b") };
        let run = |server, gpu: &str, kind: &str| {
            let mut kv = vec![("gpu", gpu), ("tp", "1"), ("precision", "mxfp4")];
            if !kind.is_empty() {
                kv.push(("mxfp4_activations", kind));
            }
            command(server, &kv, &w)
        };
        // vLLM: FP8 on Blackwell by its environment, through env(1); its
        // default 16-bit needs nothing; none known for FP8 on the MI355X.
        let fp8 = run(Server::Vllm, "b200", "fp8").unwrap();
        let words = shlex::split(&fp8).unwrap();
        assert_eq!(words[..4], ["env", "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1", "vllm", "serve"], "{fp8}");
        assert_eq!(run(Server::Vllm, "b200", "bf16"), run(Server::Vllm, "b200", ""));
        let e = run(Server::Vllm, "mi355x", "fp8").unwrap_err();
        assert!(e.contains("on the MI355X: no vLLM switch") && e.contains("--mxfp4-activations bf16"), "{e}");
        // SGLang: 16-bit by its flag on Blackwell; FP8 is its default.
        let bf16 = run(Server::Sglang, "b200", "bf16").unwrap();
        assert!(bf16.ends_with(" --flashinfer-mxfp4-moe-precision bf16"), "{bf16}");
        assert_eq!(run(Server::Sglang, "b200", "fp8"), run(Server::Sglang, "b200", ""));
        assert!(run(Server::Sglang, "mi355x", "bf16").unwrap_err().contains("SGLang's switch for it there"));
        // TensorRT-LLM: FP8 on Blackwell; no option known for 16-bit.
        assert!(run(Server::Trtllm, "b200", "fp8").is_ok());
        let e = run(Server::Trtllm, "b200", "bf16").unwrap_err();
        assert!(e.contains("TensorRT-LLM's MoE backend on Blackwell") && e.contains("fp8"), "{e}");
        // goodput's own server takes either as its flag.
        let ours = run(Server::Goodput, "mi355x", "fp8").unwrap();
        assert!(ours.contains(" --mxfp4-activations fp8"), "{ours}");
    }

    #[test]
    fn sglang_gets_its_own_flags() {
        let p = params(&[
            ("tp", "4"),
            ("dp", "2"),
            ("precision", "fp8"),
            ("kv_cache_dtype", "fp8"),
            ("max_num_seqs", "256"),
            ("max_num_batched_tokens", "8192"),
        ]);
        assert_eq!(
            shell_words(
                &serve_words(
                    Server::Sglang,
                    &p,
                    &weights("meta-llama/Llama-3.1-70B-Instruct"),
                    None,
                    "llama-3.1-70b",
                    Some(0.9)
                )
                .unwrap()
            ),
            "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --served-model-name \
             llama-3.1-70b --quantization fp8 --tp-size 4 --dp-size 2 --kv-cache-dtype fp8_e4m3 \
             --max-running-requests 256 --chunked-prefill-size 8192 --mem-fraction-static 0.9 --enable-metrics"
        );
        let ep = params(&[("tp", "8"), ("dp", "1"), ("ep", "8"), ("precision", "bf16")]);
        let w = flags(Server::Sglang, &ep, Loaded::Bf16, None, Some(0.9)).unwrap();
        assert!(w.windows(2).any(|w| w == ["--ep-size", "8"]) && w.windows(2).any(|w| w == ["--dtype", "bfloat16"]));
        // Experts over data-parallel ranks: SGLang's DP attention, its
        // --tp-size every GPU of the server; over each replica's TP group:
        // replicas.
        let sgl =
            |kv: &[(&str, &str)]| flags(Server::Sglang, &params(kv), Loaded::Checkpoint, None, Some(0.9)).unwrap();
        let w = sgl(&[("tp", "2"), ("dp", "4"), ("ep", "8")]).join(" ");
        assert!(w.starts_with("--tp-size 8 --dp-size 4 --enable-dp-attention --ep-size 8 "), "{w}");
        let w = sgl(&[("tp", "2"), ("dp", "4"), ("ep", "2")]).join(" ");
        assert!(w.starts_with("--tp-size 2 --dp-size 4 --ep-size 2 "), "{w}");
        // A router names the replicas' balancing, not the DP attention
        // ranks', which SGLang deals in turn, as the engine does.
        let w = sgl(&[("tp", "2"), ("dp", "4"), ("ep", "2"), ("router", "least-loaded")]).join(" ");
        assert!(w.contains("--load-balance-method total_requests"), "{w}");
        let w = sgl(&[("tp", "2"), ("dp", "4"), ("ep", "8"), ("router", "least-loaded")]).join(" ");
        assert!(!w.contains("--load-balance-method"), "{w}");
        let why = |kv: &[(&str, &str)]| command(Server::Sglang, kv, &weights("my-org/tuned")).unwrap_err();
        assert!(why(&[("tp", "1"), ("dp", "8"), ("ep", "4")]).contains("or with its DP attention over all 8 GPUs"));
        assert!(why(&[("spec_tokens", "3")]).contains("SGLang needs the drafter named"));
        assert!(why(&[("precision", "fp4")]).starts_with("FP4 weights: SGLang loads"));
    }

    /// Prefill apart from decode: every unit's instances, each a server of
    /// its pool's sizes on GPUs of its own, the router in front, as a
    /// script a POSIX shell reads.
    #[test]
    fn pools_are_servers_of_their_own_behind_a_router() {
        // Two units of 1:1 on a GPU each: two prefill servers, then two decode ones.
        let two = params(&[("tp", "1"), ("dp", "2"), ("pd", "1:1"), ("precision", "fp8")]);
        let p = Servers::pools(&two).unwrap().unwrap();
        assert_eq!(p.spec.as_deref(), Some("2:2"));
        let roles: Vec<(Role, u32)> = p.instances.iter().map(|(r, _, g)| (*r, *g)).collect();
        use Role::{Decode, Prefill};
        assert_eq!(roles, [(Prefill, 1), (Prefill, 1), (Decode, 1), (Decode, 1)]);
        assert!(p.instances.iter().all(|(_, k, _)| !k.contains_key("pd") && k["dp"] == "1" && k["tp"] == "1"));
        // The engine that rehearses it runs the same pools (it refuses --dp beside them).
        let g = goodput_flags(&two, Some(0.9)).unwrap().join(" ");
        assert!(g.contains("--pd 2:2") && !g.contains("--dp"), "{g}");
        assert!(Servers::pools(&params(&[("tp", "1")])).is_none());
        assert!(Servers::pools(&params(&[("pd", "1-1")])).unwrap().unwrap_err().contains("is not P:D"));

        // Pools of their own sizes: two prefill servers of one GPU, a decode one of two.
        let sized = params(&[("tp", "1"), ("dp", "1"), ("pd", "2:1xTP2")]);
        let w = weights("meta-llama/Llama-3.1-8B-Instruct");
        let p = Servers::pools(&sized).unwrap().unwrap();
        let vllm = servers_script(Server::Vllm, &p, &w, None, "llama-3.1-8b", Some(0.9)).unwrap();
        let serve = "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name llama-3.1-8b --dtype bfloat16";
        for line in [
            format!(
                "CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f1-1) VLLM_NIXL_SIDE_CHANNEL_PORT=$((port + 4)) \
                 {serve} --gpu-memory-utilization 0.9 \
                 --kv-transfer-config '{{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_producer\"}}' --host \
                 127.0.0.1 --port $((port + 1)) &"
            ),
            format!(
                "CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f3-4) VLLM_NIXL_SIDE_CHANNEL_PORT=$((port + 6)) \
                 {serve} --tensor-parallel-size 2 \
                 --gpu-memory-utilization 0.9 --kv-transfer-config \
                 '{{\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_consumer\"}}' --host 127.0.0.1 --port \
                 $((port + 3)) &"
            ),
            "vllm-router --vllm-pd-disaggregation --prefill http://127.0.0.1:$((port + 1)) --prefill \
             http://127.0.0.1:$((port + 2)) --decode http://127.0.0.1:$((port + 3)) --policy cache_aware --host \
             127.0.0.1 --port \"$port\" --prometheus-port $((port + 7)) &"
                .to_string(),
        ] {
            assert!(vllm.lines().any(|l| l == line), "{line}\nnot in\n{vllm}");
        }
        assert!(vllm.starts_with("# 2 prefill and 1 decode vLLM servers on 4 GPUs,"), "{vllm}");
        assert!(vllm.contains("which picks each pool's server by its cache_aware policy"), "{vllm}");
        // The first four of the GPUs it may use, and no fewer.
        assert!(vllm.contains("\nvisible=${CUDA_VISIBLE_DEVICES:-0,1,2,3}\n"), "{vllm}");
        assert!(vllm.contains("-ge 4 ] || { echo \"these servers take 4 GPUs;"), "{vllm}");
        let sglang = servers_script(Server::Sglang, &p, &w, None, "llama-3.1-8b", Some(0.9)).unwrap();
        assert!(sglang.contains(
            "--disaggregation-mode prefill --disaggregation-transfer-backend nixl --base-gpu-id 1 --host 127.0.0.1 \
             --port $((port + 2)) --disaggregation-bootstrap-port $((port + 5)) &"
        ));
        assert!(
            sglang.contains("--tp-size 2 --mem-fraction-static 0.9 --enable-metrics --disaggregation-mode decode"),
            "{sglang}"
        );
        assert!(sglang.contains(
            "python3 -m sglang_router.launch_router --pd-disaggregation --prefill http://127.0.0.1:$((port + 1)) \
             $((port + 4)) --prefill http://127.0.0.1:$((port + 2)) $((port + 5)) --decode \
             http://127.0.0.1:$((port + 3)) --policy cache_aware --host 127.0.0.1 --port \"$port\" --prometheus-port \
             $((port + 7)) &"
        ));
        // Both read as a POSIX shell reads them.
        for script in [&vllm, &sglang] {
            let o = std::process::Command::new("sh").args(["-n", "-c", script]).output().unwrap();
            assert!(o.status.success(), "{}\n{script}", String::from_utf8_lossy(&o.stderr));
        }

        // An expert-parallel pool is one vLLM server of DP ranks sharing its
        // experts, on as many GPUs (SGLang's with its DP attention).
        let moe = params(&[("tp", "1"), ("dp", "4"), ("ep", "4"), ("pd", "1xEP4:1xEP8")]);
        let p = Servers::pools(&moe).unwrap().unwrap();
        assert_eq!(p.instances.iter().map(|(_, _, g)| *g).collect::<Vec<_>>(), [4, 8]);
        let vllm = servers_script(Server::Vllm, &p, &w, None, "x", Some(0.9)).unwrap();
        assert!(vllm.contains("CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f5-12) "), "{vllm}");
        // Each rank its own NIXL side channel: the prefill server's four from
        // port + 3, the decode server's eight from port + 7, the router's
        // metrics after them.
        assert!(vllm.contains("VLLM_NIXL_SIDE_CHANNEL_PORT=$((port + 3)) "), "{vllm}");
        assert!(vllm.contains("VLLM_NIXL_SIDE_CHANNEL_PORT=$((port + 7)) "), "{vllm}");
        assert!(vllm.contains("--prometheus-port $((port + 15)) "), "{vllm}");
        assert_eq!(p.ports(), 16, "the router's, two servers', twelve ranks' and the metrics'");
        assert!(vllm.contains("--data-parallel-size 8 --enable-expert-parallel"), "{vllm}");
        // SGLang's: its DP attention, each server on its GPUs from its base.
        let sglang = servers_script(Server::Sglang, &p, &w, None, "x", Some(0.9)).unwrap();
        assert!(
            sglang.contains("--tp-size 4 --dp-size 4 --enable-dp-attention --ep-size 4 ")
                && sglang.contains("--tp-size 8 --dp-size 8 --enable-dp-attention --ep-size 8 ")
                && sglang.contains("--base-gpu-id 4 "),
            "{sglang}"
        );
    }

    /// The plan's router in front of data-parallel replicas: where the
    /// server's own balancing is that policy, its flag (vLLM's own for
    /// least-loaded; SGLang's --load-balance-method); else the replicas as
    /// servers of their own behind the router's policy.
    #[test]
    fn the_plans_router_is_the_servers_balancing_or_a_router_in_front() {
        let knobs = |router: &str| params(&[("tp", "1"), ("dp", "2"), ("precision", "fp8"), ("router", router)]);
        let w = weights("meta-llama/Llama-3.1-8B-Instruct");
        // The plan predicts SGLang's power_of_two on the loads its script
        // has polled every second; vLLM router's on live counts.
        assert_eq!(router_poll_s(Server::Sglang, RouterPolicy::PowerOfTwo), Some(1.0));
        assert_eq!(router_poll_s(Server::Vllm, RouterPolicy::PowerOfTwo), None);
        assert_eq!(router_poll_s(Server::Sglang, RouterPolicy::RoundRobin), None);
        // vLLM's own balancing stands for least-loaded.
        assert!(Servers::replicas(Server::Vllm, &knobs("least-loaded")).is_none());
        let one = command(Server::Vllm, &[("tp", "1"), ("dp", "2"), ("router", "least-loaded")], &w).unwrap();
        assert!(one.contains("--data-parallel-size 2") && !one.contains("balance"), "{one}");
        // Where plan names it (`internal_lb`), vLLM's command is the same one
        // server, and goodput serve's rehearsal balances as it does.
        let own = [("tp", "1"), ("dp", "2"), ("router", "least-loaded"), ("internal_lb", "true")];
        assert_eq!(command(Server::Vllm, &own, &w).unwrap(), one);
        let g = goodput_flags(&params(&own), Some(0.9)).unwrap().join(" ");
        assert!(g.contains("--internal-lb") && !g.contains("true"), "{g}");
        let off = goodput_flags(&params(&[("dp", "2"), ("internal_lb", "false")]), Some(0.9)).unwrap().join(" ");
        assert!(!off.contains("internal"), "{off}");
        // A step ahead: vLLM's flag and goodput serve's; SGLang's own default.
        let ahead = [("tp", "1"), ("async_scheduling", "true")];
        let vllm = command(Server::Vllm, &ahead, &w).unwrap();
        assert!(vllm.contains(" --async-scheduling"), "{vllm}");
        let sglang = command(Server::Sglang, &ahead, &w).unwrap();
        assert!(!sglang.contains("async") && !sglang.contains("overlap"), "{sglang}");
        let g = goodput_flags(&params(&ahead), Some(0.9)).unwrap().join(" ");
        assert!(g.contains("--async-scheduling") && !g.contains("true"), "{g}");
        // Not a step ahead: each server's own switch off.
        let not = [("tp", "1"), ("async_scheduling", "false")];
        assert!(command(Server::Vllm, &not, &w).unwrap().contains(" --no-async-scheduling"));
        assert!(command(Server::Sglang, &not, &w).unwrap().contains(" --disable-overlap-schedule"));
        let g = goodput_flags(&params(&not), Some(0.9)).unwrap().join(" ");
        assert!(g.contains("--no-async-scheduling") && !g.contains("false"), "{g}");
        // The default names nothing.
        let plain = [("tp", "1")];
        for s in [Server::Vllm, Server::Sglang, Server::Trtllm] {
            let c = command(s, &plain, &w).unwrap();
            assert!(!c.contains("overlap") && !c.contains("async"), "{c}");
        }
        // SGLang's for round-robin and least-loaded.
        for (router, method) in [("round-robin", "round_robin"), ("least-loaded", "total_requests")] {
            assert!(Servers::replicas(Server::Sglang, &knobs(router)).is_none());
            let one = command(Server::Sglang, &[("tp", "1"), ("dp", "2"), ("router", router)], &w).unwrap();
            assert!(one.contains(&format!("--dp-size 2 --load-balance-method {method}")), "{one}");
        }
        // The rest: replicas behind the router.
        for (server, router, policy) in [
            (Server::Vllm, "round-robin", "round_robin"),
            (Server::Vllm, "prefix-aware", "cache_aware"),
            (Server::Sglang, "prefix-aware", "cache_aware"),
            (Server::Vllm, "power-of-two", "power_of_two"),
            (Server::Sglang, "power_of_two", "power_of_two"),
        ] {
            let r = Servers::replicas(server, &knobs(router)).unwrap();
            assert_eq!((r.policy, r.count(Role::Replica)), (Some(policy), 2));
            assert!(r.instances.iter().all(|(_, k, g)| *g == 1 && k["dp"] == "1" && !k.contains_key("router")));
            let script = servers_script(server, &r, &w, None, "llama-3.1-8b", Some(0.9)).unwrap();
            assert!(script.starts_with(&format!("# 2 {} servers on 2 GPUs, behind ", server.title())), "{script}");
            // SGLang's power_of_two polls the loads it compares: every second.
            let poll = match (server, policy) {
                (Server::Sglang, "power_of_two") => " --worker-load-check-interval 1",
                _ => "",
            };
            let front = format!(
                "--worker-urls http://127.0.0.1:$((port + 1)) http://127.0.0.1:$((port + 2)) --policy {policy}{poll} \
                 --host 127.0.0.1 --port \"$port\" --prometheus-port $((port + 5)) &"
            );
            assert!(script.contains(&front), "{front}\nnot in\n{script}");
            let second = if server == Server::Vllm {
                "CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f2-2) vllm serve"
            } else {
                "--base-gpu-id 1"
            };
            assert!(script.contains(second), "{script}");
            assert!(!script.contains("--data-parallel-size") && !script.contains("--dp-size"), "{script}");
            let o = std::process::Command::new("sh").args(["-n", "-c", &script]).output().unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        }
        // One replica is no router's to spread; pools are not replicas.
        assert!(
            Servers::replicas(Server::Vllm, &params(&[("tp", "2"), ("dp", "1"), ("router", "round-robin")])).is_none()
        );
        let mut pd = knobs("round-robin");
        pd.insert("pd".into(), "1:1".into());
        assert!(Servers::replicas(Server::Vllm, &pd).is_none());

        // Expert-parallel groups that do not span the server's GPUs are
        // replicas of their own, least-loaded the router's power_of_two.
        let groups = |server, kv: &[(&str, &str)]| {
            Servers::replicas(server, &params(kv)).map(|r| {
                let each: Vec<(String, String, u32)> =
                    r.instances.iter().map(|(_, k, g)| (k["dp"].clone(), k["ep"].clone(), *g)).collect();
                (r.policy.unwrap(), each)
            })
        };
        let two = |dp: &str, gpus| vec![(dp.to_string(), "2".to_string(), gpus); 2];
        let (tp1, tp2) = ([("tp", "1"), ("dp", "4"), ("ep", "2")], [("tp", "2"), ("dp", "2"), ("ep", "2")]);
        assert_eq!(groups(Server::Vllm, &tp1), Some(("power_of_two", two("2", 2))));
        assert_eq!(groups(Server::Vllm, &tp2), Some(("power_of_two", two("1", 2))));
        assert_eq!(groups(Server::Sglang, &tp1), Some(("power_of_two", two("2", 2))));
        assert_eq!(groups(Server::Sglang, &tp2), None, "SGLang's --dp-size replicas, experts over each's TP");
        let rr = [("tp", "1"), ("dp", "4"), ("ep", "2"), ("router", "round-robin")];
        assert_eq!(groups(Server::Sglang, &rr).map(|g| g.0), Some("round_robin"));
        assert_eq!(groups(Server::Vllm, &[("tp", "1"), ("dp", "2"), ("ep", "2")]), None, "one group");
    }

    /// A width the weights are not published in loads the checkpoint given
    /// for it, or the one published for the model; FP8 of 16-bit weights is
    /// quantized as they load; a model published in FP8 has no 16-bit
    /// command without 16-bit weights given.
    #[test]
    fn each_width_loads_its_own_checkpoint() {
        let llama = weights("meta-llama/Llama-3.3-70B-Instruct");
        let fp4 = command(Server::Vllm, &[("precision", "fp4"), ("tp", "2")], &llama).unwrap();
        assert_eq!(
            fp4,
            "vllm serve nvidia/Llama-3.3-70B-Instruct-NVFP4 --served-model-name named --tensor-parallel-size 2 \
             --gpu-memory-utilization 0.9"
        );
        let fp8 = command(Server::Vllm, &[("precision", "fp8")], &llama).unwrap();
        assert!(fp8
            .starts_with("vllm serve meta-llama/Llama-3.3-70B-Instruct --served-model-name named --quantization fp8"));
        // No INT4 of Llama 3.3 is known here: the reason says how to give one.
        let why = command(Server::Vllm, &[("precision", "int4")], &llama).unwrap_err();
        assert!(why.ends_with("give one as --serve-checkpoint int4=WEIGHTS"), "{why}");
        let given = Weights { checkpoints: vec![(Precision::Int4, "/ckpt/awq".into())], ..llama.clone() };
        let int4 = command(Server::Sglang, &[("precision", "int4")], &given).unwrap();
        assert!(
            int4.starts_with(
                "python3 -m sglang.launch_server --model-path /ckpt/awq --served-model-name named \
                                 --mem-fraction-static"
            ),
            "{int4}"
        );
        // On AMD's MI355X FP4 is MXFP4: AMD's checkpoint, not NVIDIA's
        // NVFP4 one; where AMD publishes none, the reason says what to give.
        let amd = [("precision", "fp4"), ("gpu", "mi355x")];
        let mxfp4 = command(Server::Vllm, &amd, &llama).unwrap();
        assert!(mxfp4.starts_with("vllm serve amd/Llama-3.3-70B-Instruct-MXFP4-Preview "), "{mxfp4}");
        let why = command(Server::Vllm, &amd, &weights("meta-llama/Llama-3.1-8B-Instruct")).unwrap_err();
        assert!(why.contains("MXFP4 checkpoint") && why.ends_with("--serve-checkpoint fp4=WEIGHTS"), "{why}");
        let fp8 = command(Server::Vllm, &[("precision", "fp8"), ("gpu", "mi355x")], &llama).unwrap();
        assert!(fp8.contains("--quantization fp8"), "{fp8}");
        // Given beats published, and loads on AMD's too.
        let given = Weights { checkpoints: vec![(Precision::Fp4, "mine/fp4".into())], ..llama };
        assert!(command(Server::Vllm, &[("precision", "fp4")], &given).unwrap().starts_with("vllm serve mine/fp4 "));
        assert!(command(Server::Vllm, &amd, &given).unwrap().starts_with("vllm serve mine/fp4 "));
        // DeepSeek-R1 is published in FP8: FP8 loads it as it is, FP4 has NVIDIA's, 16-bit has nothing.
        let r1 = Weights { width: Some(Precision::Fp8), ..weights("deepseek-ai/DeepSeek-R1") };
        let fp8 = command(Server::Vllm, &[("precision", "fp8")], &r1).unwrap();
        assert!(fp8.starts_with("vllm serve deepseek-ai/DeepSeek-R1 --served-model-name named --gpu"), "{fp8}");
        assert!(command(Server::Vllm, &[("precision", "fp4")], &r1).unwrap().contains("nvidia/DeepSeek-R1-FP4"));
        let why = command(Server::Vllm, &[("precision", "bf16")], &r1).unwrap_err();
        assert!(why.contains("published in fp8") && why.contains("--serve-checkpoint bf16=WEIGHTS"), "{why}");
        // No id known, a checkpoint given: that width alone has a command.
        let none = Weights { checkpoints: vec![(Precision::Fp4, "f".into())], ..Weights::default() };
        assert!(command(Server::Vllm, &[("precision", "fp4")], &none).is_ok());
        let why = command(Server::Vllm, &[("precision", "bf16")], &none).unwrap_err();
        assert!(why.contains("--serve-model"), "{why}");
        // Every published checkpoint is of a model the catalog names, at a width other than its own.
        for (id, p, _) in CHECKPOINTS {
            assert!(HUB_IDS.iter().any(|(_, h)| *h == id), "{id}");
            assert_ne!(p, Precision::Bf16);
        }
        assert!(parse_checkpoints(&["fp4=a".into(), "nvfp4=b".into()]).unwrap_err().to_string().contains("twice"));
        assert!(parse_checkpoints(&["fp4".into()]).unwrap_err().to_string().contains("fp4=nvidia/"));
        assert!(parse_checkpoints(&["fp5=x".into()]).is_err());
    }

    /// A drafting configuration names its drafter in each server's flags:
    /// the one given, else the one published for the model.
    #[test]
    fn a_drafting_configuration_names_its_drafter() {
        let kv = [("precision", "fp8"), ("spec_tokens", "3")];
        let llama = weights("meta-llama/Llama-3.1-8B-Instruct");
        let vllm = command(Server::Vllm, &kv, &llama).unwrap();
        assert!(
            vllm.ends_with(
                r#"--speculative-config '{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":3}'"#
            ),
            "{vllm}"
        );
        let sglang = command(Server::Sglang, &kv, &llama).unwrap();
        assert!(
            sglang.ends_with(
                "--speculative-algorithm EAGLE3 --speculative-draft-model-path yuhuili/EAGLE3-LLaMA3.1-Instruct-8B \
                 --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4"
            ),
            "{sglang}"
        );
        let r1 = Weights { width: Some(Precision::Fp8), ..weights("deepseek-ai/DeepSeek-R1") };
        assert!(command(Server::Vllm, &kv, &r1).unwrap().ends_with(r#"'{"method":"mtp","num_speculative_tokens":3}'"#));
        let mtp = command(Server::Sglang, &kv, &r1).unwrap();
        assert!(
            mtp.contains("--speculative-algorithm EAGLE --speculative-num-steps 3")
                && !mtp.contains("--speculative-draft")
        );
        let given = Weights { drafter: Some("draft=meta-llama/Llama-3.2-1B-Instruct".parse().unwrap()), ..llama };
        assert!(command(Server::Vllm, &kv, &given)
            .unwrap()
            .contains(r#""method":"draft_model","model":"meta-llama/Llama-3.2-1B-Instruct""#));
        let why = command(Server::Vllm, &kv, &weights("my-org/tuned")).unwrap_err();
        assert!(why.contains("--serve-drafter eagle3=WEIGHTS") && why.contains("assumed 0.7"), "{why}");
        assert!("yuhuili/x".parse::<Drafter>().unwrap_err().contains("say what drafts"));
        assert!("medusa=x".parse::<Drafter>().unwrap_err().contains("'medusa' is not a drafter"));
        assert_eq!("MTP".parse::<Drafter>(), Ok(Drafter::Mtp));
        for (id, d) in DRAFTERS {
            assert!(HUB_IDS.iter().any(|(_, h)| *h == id) && d.parse::<Drafter>().is_ok(), "{id}");
        }
    }

    #[test]
    fn the_served_weights_come_from_the_flag_the_file_or_the_catalog() {
        assert_eq!(served_model("llama-3.3-70b", None).as_deref(), Some("meta-llama/Llama-3.3-70B-Instruct"));
        assert_eq!(served_model("Llama-3.1-8B-Instruct", None).as_deref(), Some("meta-llama/Llama-3.1-8B-Instruct"));
        assert_eq!(served_model("deepseek-r1-0528", None).as_deref(), Some("deepseek-ai/DeepSeek-R1-0528"));
        assert_eq!(served_model("my-org/tuned", None).as_deref(), Some("my-org/tuned"));
        assert_eq!(served_model("llama-3.1-70b", Some("/models/l70")).as_deref(), Some("/models/l70"));
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("config.json");
        std::fs::write(&cfg, "{}").unwrap();
        assert_eq!(served_model(cfg.to_str().unwrap(), None), Some(dir.path().display().to_string()));
        // Every catalog model has an id.
        for m in ModelSpec::catalog() {
            assert!(served_model(&m.name, None).is_some(), "{}", m.name);
        }
    }

    /// A plan's frontier of four configurations over two GPU types: a grid
    /// per type, a disaggregated one started by its script, one vLLM has no
    /// layout for left out with its reason, and the sweep's command with the
    /// plan's SLO, price and workload.
    #[test]
    fn the_grid_holds_what_vllm_starts_and_names_what_it_cannot() {
        use goodput_core::doc::frontier::{FrontierSource, PointId};
        let knobs = |gpu: &str, tp: &str| {
            params(&[("gpu", gpu), ("tp", tp), ("dp", "1"), ("precision", "fp8"), ("max_num_seqs", "64")])
        };
        let mut pd = knobs("h200", "1");
        pd.insert("pd".into(), "1:1".into());
        let mut ep = knobs("h200", "1");
        ep.insert("ep".into(), "4".into());
        let tool = crate::common::tool();
        let mut doc = FrontierResult {
            // A line break in a name stays in its comment.
            model: "Llama-3.1-8B\n[x]".into(),
            slo: Some("tpot:p90<=40ms".into()),
            configs: vec![
                FrontierConfig::new("h100 tp1".into(), knobs("h100-sxm", "1"), None, 1, Some(2.0)),
                FrontierConfig::new("h200 tp2".into(), knobs("h200", "2"), None, 2, Some(3.0)),
                FrontierConfig::new("h200 1P+1D".into(), pd, None, 2, Some(3.0)),
                FrontierConfig::new("h200 ep4".into(), ep, None, 1, Some(3.0)),
            ],
            frontier: (0..4).map(|config| PointId { config, point: 0 }).collect(),
            ..FrontierResult::new(tool, FrontierSource::Predicted, 0.9, 90.0)
        };
        set_commands(&mut doc, Server::Vllm, &weights("meta-llama/Llama-3.1-8B-Instruct"), "llama-3.1-8b", Some(0.9));
        let dir = tempfile::tempdir().unwrap();
        let cx = SweepContext {
            named: "llama-3.1-8b",
            workload: vec!["--input-tokens".into(), "512".into()],
            trace: None,
            plan_output: Some(Path::new("plan.json")),
        };
        let grids = write_grids(&doc, &dir.path().join("g.toml"), &cx).unwrap();
        let names: Vec<_> = grids.iter().map(|g| g.path.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["g-h100-sxm.toml", "g-h200.toml"]);
        assert_eq!(grids.iter().map(|g| (g.configs, g.left_out.len())).collect::<Vec<_>>(), [(1, 0), (2, 1)]);
        let h200 = std::fs::read_to_string(&grids[1].path).unwrap();
        assert!(h200.contains("#   h200 ep4: expert parallel over 4 GPUs with TP 1 × DP 1"), "{h200}");
        assert!(h200.contains("#   goodput compare plan.json "), "{h200}");
        let sweep = grids[1].sweep.as_deref().unwrap();
        assert!(
            sweep.contains("--model llama-3.1-8b --input-tokens 512 --slo 'tpot:p90<=40ms' --gpu-hour-usd 3"),
            "{sweep}"
        );
        assert!(h200.contains("# on the plan's frontier\n[[config]]\nid = \"h200 tp2\""), "{h200}");
        let parsed: toml::Table = toml::from_str(&h200).unwrap();
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["config"], "{h200}");
        let table = &parsed["config"].as_array().unwrap()[0];
        assert_eq!((table["id"].as_str(), table["tp"].as_integer()), (Some("h200 tp2"), Some(2)));
        assert!(table["launch"].as_str().unwrap().ends_with("--host 127.0.0.1 --port \"$0\""));
        // The pools' script, line for line, its port from sh -c's $0.
        let apart = &parsed["config"].as_array().unwrap()[1];
        assert_eq!(apart["pd"].as_str(), Some("1:1"));
        let script = doc.configs[2].serve_command.as_ref().unwrap();
        assert!(script.script);
        assert_eq!(apart["launch"].as_str().unwrap(), format!("PORT=\"$0\"\n{}", script.command.as_deref().unwrap()));
        assert!(h200.contains("launch = '''\nPORT=\"$0\"\n# 1 prefill and 1 decode vLLM servers on 2 GPUs,"), "{h200}");
        // No frontier, no grid.
        doc.frontier.clear();
        assert!(write_grids(&doc, &dir.path().join("h.toml"), &cx).unwrap_err().to_string().contains("no frontier"));
    }

    /// A grid of more loads than a sweep measures keeps the plan's best
    /// point's among the eight it thins them to, beside the least and the
    /// most.
    #[test]
    fn a_grid_s_sweep_measures_the_best_point_s_load() {
        use goodput_core::doc::frontier::{BestPoint, FrontierSource, PointId};
        let knobs = params(&[("gpu", "h100-sxm"), ("tp", "1"), ("dp", "1"), ("precision", "fp8")]);
        let mut c = FrontierConfig::new("h100 tp1".into(), knobs, None, 1, Some(2.0));
        c.points = (0..12).map(|k| point(1 << k, 100.0 * f64::from(k + 1), 200.0 - 10.0 * f64::from(k))).collect();
        let mut doc = FrontierResult {
            model: "Llama-3.1-8B".into(),
            configs: vec![c],
            frontier: (0..12).map(|point| PointId { config: 0, point }).collect(),
            ..FrontierResult::new(crate::common::tool(), FrontierSource::Predicted, 0.9, 90.0)
        };
        set_commands(&mut doc, Server::Vllm, &weights("meta-llama/Llama-3.1-8B-Instruct"), "llama-3.1-8b", Some(0.9));
        let dir = tempfile::tempdir().unwrap();
        let cx = SweepContext { named: "llama-3.1-8b", workload: Vec::new(), trace: None, plan_output: None };
        let sweep = |doc: &FrontierResult| {
            let grids = write_grids(doc, &dir.path().join("g.toml"), &cx).unwrap();
            grids[0].sweep.clone().unwrap()
        };
        assert!(sweep(&doc).contains("--concurrency '1,2,8,16,64,128,512,2048' "), "{}", sweep(&doc));
        doc.best =
            Some(BestPoint { at: PointId { config: 0, point: 10 }, good_tokens_per_usd: None, reason: "".into() });
        assert!(sweep(&doc).contains("--concurrency '1,2,8,16,64,128,1024,2048' "), "{}", sweep(&doc));
    }

    /// A point of `users` at `per_gpu` tokens/s per GPU and `per_user`
    /// tokens/s per user, as a plan gives it.
    fn point(users: u64, per_gpu: f64, per_user: f64) -> goodput_core::doc::frontier::FrontierPoint {
        serde_json::from_value(serde_json::json!({
            "load": {"kind": "concurrency", "value": users},
            "output_tokens_per_s": per_gpu,
            "output_tokens_per_s_per_gpu": per_gpu,
            "tokens_per_s_per_user": per_user,
            "ttft_ms": 50.0,
            "tpot_ms": 1000.0 / per_user,
            "completed": 10
        }))
        .unwrap()
    }

    /// Where the whole frontier drafts (no one command starts it), the
    /// grid holds the frontier of what one command starts instead, each
    /// table saying which it is; and where nothing can be started, no
    /// sweep is offered.
    #[test]
    fn a_frontier_no_command_starts_gives_the_nearest_that_one_does() {
        use goodput_core::doc::frontier::{analyze_frontier, FrontierSource};
        let knobs = |spec: &str| {
            params(&[("gpu", "h100-sxm"), ("tp", "1"), ("dp", "1"), ("precision", "fp8"), ("spec_tokens", spec)])
        };
        let mut drafts = FrontierConfig::new("spec3".into(), knobs("3"), None, 1, None);
        drafts.points = vec![point(1, 200.0, 150.0), point(8, 900.0, 100.0)];
        let mut plain = FrontierConfig::new("plain".into(), knobs("0"), None, 1, None);
        plain.points = vec![point(1, 100.0, 90.0), point(8, 700.0, 80.0)];
        let mut doc = FrontierResult {
            configs: vec![drafts, plain],
            ..FrontierResult::new(crate::common::tool(), FrontierSource::Predicted, 0.9, 50.0)
        };
        analyze_frontier(&mut doc);
        assert!(doc.frontier.iter().all(|p| p.config == 0), "the drafting one dominates");
        set_commands(&mut doc, Server::Vllm, &weights("m/x"), "x", Some(0.9));
        let dir = tempfile::tempdir().unwrap();
        let cx = SweepContext { named: "x", workload: Vec::new(), trace: None, plan_output: None };
        let grids = write_grids(&doc, &dir.path().join("g.toml"), &cx).unwrap();
        assert_eq!((grids[0].configs, grids[0].left_out.len()), (1, 1));
        let text = std::fs::read_to_string(&grids[0].path).unwrap();
        assert!(
            text.contains("# on the frontier of what one vLLM command starts\n[[config]]\nid = \"plain\""),
            "{text}"
        );
        assert!(text.contains("#   spec3: speculative decoding"), "{text}");
        // Nothing in it drafts: no word of the drafts' acceptance.
        assert!(!text.contains("acceptance the plan assumed"), "{text}");
        assert!(grids[0].sweep.as_deref().is_some_and(|s| s.contains("--concurrency '1,8'")), "{:?}", grids[0].sweep);
        // Nothing startable: the file says so, and no sweep is offered.
        doc.configs.remove(1);
        analyze_frontier(&mut doc);
        let grids = write_grids(&doc, &dir.path().join("h.toml"), &cx).unwrap();
        assert_eq!((grids[0].configs, grids[0].sweep.as_deref()), (0, None));
        let text = std::fs::read_to_string(&grids[0].path).unwrap();
        assert!(
            text.contains("has one vLLM command: the file has none to sweep") && !text.contains("goodput sweep"),
            "{text}"
        );
    }

    #[test]
    fn a_long_list_of_loads_is_thinned_to_eight_with_its_ends() {
        let loads: Vec<u64> = (0..12).map(|k| 1u64 << k).collect();
        let t = thin(&loads, None);
        assert_eq!(t, [1, 2, 8, 16, 64, 128, 512, 2048]);
        assert_eq!(thin(&[1, 4], None), [1, 4]);
        // The plan's best point's load stays, in place of the one nearest it.
        assert_eq!(thin(&loads, Some(10)), [1, 2, 8, 16, 64, 128, 1024, 2048]);
        assert_eq!(thin(&loads, Some(2)), [1, 4, 8, 16, 64, 128, 512, 2048]);
        assert_eq!(thin(&loads, Some(9)), t);
        assert_eq!(thin(&loads, Some(11)), t);
        // A trace's rates as the speeds that offer them, rounded where division leaves a trace of float.
        let rate = 3.7;
        let rates: Vec<f64> = [0.25, 0.5, 1.0, 2.0, 0.5].iter().map(|s| s * rate).collect();
        assert_eq!(trace_speeds(&rates, rate, None), ["0.25", "0.5", "1", "2"]);
        let rates: Vec<f64> = (0..12).map(|k| f64::from(1 << k) / 4.0 * rate).collect();
        let speeds = trace_speeds(&rates, rate, Some(rates[10]));
        assert_eq!(speeds, ["0.25", "0.5", "2", "4", "16", "32", "256", "512"]);
    }
}
