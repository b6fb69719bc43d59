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
//! `--max-num-batched-tokens` and `--gpu-memory-utilization`. What has no
//! flag of its own (a quantized checkpoint, a drafter, separate prefill and
//! decode servers) gets no command, and says why.

use anyhow::{bail, Context, Result};
use goodput_core::doc::frontier::{FrontierConfig, FrontierResult, ParamMap, ServeCommand};
use goodput_core::doc::sweep::Load;
use goodput_sim::engine::ModelSpec;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The catalog's models as their publishers name their instruction-tuned
/// weights on Hugging Face, by the catalog key the name is looked up by
/// ([`ModelSpec::catalog_key`]).
const HUB_IDS: [(&str, &str); 23] = [
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
    ("qwen3-30b-a3b", "Qwen/Qwen3-30B-A3B"),
    ("qwen3-235b-a22b", "Qwen/Qwen3-235B-A22B"),
    ("deepseek-v3", "deepseek-ai/DeepSeek-V3"),
    ("deepseek-r1", "deepseek-ai/DeepSeek-R1"),
    ("deepseek-v3-0324", "deepseek-ai/DeepSeek-V3-0324"),
    ("deepseek-r1-0528", "deepseek-ai/DeepSeek-R1-0528"),
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

/// The flags of a configuration's knobs, or why vLLM has no one command
/// for it.
fn vllm_flags(params: &ParamMap, gpu_memory_utilization: f64) -> Result<Vec<String>, String> {
    let get = |k: &str| params.get(k).map(|v| v.trim());
    let count = |k: &str| get(k).and_then(|v| v.parse::<u32>().ok()).unwrap_or(1);
    if let Some(pd) = get("pd") {
        return Err(format!(
            "prefill apart from decode ({pd}): vLLM serves it as separate prefill and decode servers joined by a KV \
             connector (--kv-transfer-config) with a proxy in front, not as one command"
        ));
    }
    if let Some(k) = get("spec_tokens").filter(|k| *k != "0") {
        return Err(format!(
            "speculative decoding ({k} draft tokens): vLLM needs the drafter named in --speculative-config (an \
             EAGLE head, MTP or a draft model, with num_speculative_tokens {k}); its acceptance decides the speed, \
             and the plan assumed {}",
            get("spec_acceptance").unwrap_or("0.7")
        ));
    }
    let mut flags = Vec::new();
    match get("precision").unwrap_or("bf16") {
        "bf16" => flags.extend(["--dtype".into(), "bfloat16".into()]),
        "fp8" => flags.extend(["--quantization".into(), "fp8".into()]),
        "fp4" => {
            return Err("FP4 weights: vLLM loads them from an NVFP4 checkpoint of the model (NVIDIA ModelOpt's or \
                        LLM Compressor's): give that checkpoint as --serve-model"
                .into())
        }
        "int4" => return Err("INT4 weights: vLLM loads them from an AWQ or GPTQ checkpoint of the model".into()),
        "int8" => return Err("INT8 weights: vLLM loads them from a W8A16 or W8A8 checkpoint of the model".into()),
        other => return Err(format!("precision {other}: no vLLM flag is known for it")),
    }
    let (tp, dp, pp, ep) = (count("tp"), count("dp"), count("pp"), count("ep"));
    if ep > 1 && ep != tp.saturating_mul(dp) {
        return Err(format!(
            "expert parallel over {ep} GPUs with TP {tp} × DP {dp}: vLLM's --enable-expert-parallel spreads the \
             experts over all {} GPUs of TP × DP",
            tp.saturating_mul(dp)
        ));
    }
    for (flag, n) in [("--tensor-parallel-size", tp), ("--pipeline-parallel-size", pp), ("--data-parallel-size", dp)] {
        if n > 1 {
            flags.extend([flag.to_string(), n.to_string()]);
        }
    }
    if ep > 1 {
        flags.push("--enable-expert-parallel".into());
    }
    if get("kv_cache_dtype").is_some_and(|v| v.eq_ignore_ascii_case("fp8")) {
        flags.extend(["--kv-cache-dtype".into(), "fp8".into()]);
    }
    for (flag, k) in [("--max-num-seqs", "max_num_seqs"), ("--max-num-batched-tokens", "max_num_batched_tokens")] {
        if let Some(v) = get(k) {
            flags.extend([flag.to_string(), v.to_string()]);
        }
    }
    flags.extend(["--gpu-memory-utilization".into(), gpu_memory_utilization.to_string()]);
    Ok(flags)
}

/// Words joined as a POSIX shell reads them back.
fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| shlex::try_quote(w).map_or_else(|_| w.replace('\0', ""), |q| q.into_owned()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `vllm serve SERVED [--served-model-name NAMED] FLAGS…`: the command's
/// words.
fn vllm_words(params: &ParamMap, served: &str, named: &str, mem: f64) -> Result<Vec<String>, String> {
    let mut words = vec!["vllm".to_string(), "serve".into(), served.to_string()];
    if named != served {
        words.extend(["--served-model-name".into(), named.to_string()]);
    }
    words.extend(vllm_flags(params, mem)?);
    Ok(words)
}

/// Sets each configuration's `serve_command`: vLLM's, for `served` (what
/// the server loads) under the name `named` (the plan's --model, which
/// the requests of a sweep then give).
pub fn set_commands(doc: &mut FrontierResult, served: Option<&str>, named: &str, mem: f64) {
    for c in &mut doc.configs {
        let (command, missing) = match served {
            None => (
                None,
                Some(format!(
                    "no Hugging Face id is known for {named}: give the weights vLLM loads as --serve-model (an id or \
                     a folder)"
                )),
            ),
            Some(s) => match vllm_words(&c.params, s, named, mem) {
                Ok(words) => (Some(shell_words(&words)), None),
                Err(why) => (None, Some(why)),
            },
        };
        c.serve_command = Some(ServeCommand { server: "vllm".into(), command, missing });
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
    /// The sweep that measures it.
    pub sweep: String,
}

/// The configurations with a point on either frontier, or the best point.
fn on_the_frontier(doc: &FrontierResult) -> BTreeSet<usize> {
    doc.frontier.iter().chain(&doc.frontier_per_usd).chain(doc.best.as_ref().map(|b| &b.at)).map(|p| p.config).collect()
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

/// What the sweep needs beside the grid: the plan's model name, workload
/// flags and SLO, and where the plan was written.
pub struct SweepContext<'a> {
    pub named: &'a str,
    pub workload: Vec<String>,
    /// With a trace, the sweep's loads are the user's to choose.
    pub trace: Option<&'a Path>,
    pub plan_output: Option<&'a Path>,
}

/// A configuration's grid table: its id, its knobs as plan named them (the
/// router left out: vLLM balances its data-parallel ranks its own way), and
/// `launch`, the script that starts vLLM on the port `sh -c` passes it as
/// `$0`.
fn table(c: &FrontierConfig, command: &str) -> String {
    let mut t = String::from("[[config]]\n");
    let value = |v: &str| match v.parse::<u64>() {
        Ok(n) => n.to_string(),
        Err(_) => toml::Value::String(v.to_string()).to_string(),
    };
    let _ = writeln!(t, "id = {}", toml::Value::String(c.id.clone()));
    for (k, v) in &c.params {
        if !matches!(k.as_str(), "router" | "spec_tokens" | "spec_acceptance" | "spec_draft_cost") {
            let _ = writeln!(t, "{k} = {}", value(v));
        }
    }
    let script = format!("exec {command} --host 127.0.0.1 --port \"$0\"");
    let _ = writeln!(t, "launch = {}", toml::Value::String(script));
    t
}

/// Writes the frontier's configurations to `out` (one file per GPU type
/// where there are several: `out`'s name with the type), each with vLLM's
/// command in `launch`, and a header with the sweep that measures them.
pub fn write_grids(doc: &FrontierResult, out: &Path, cx: &SweepContext) -> Result<Vec<Grid>> {
    let chosen = on_the_frontier(doc);
    if chosen.is_empty() {
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
        let mine: Vec<&FrontierConfig> = chosen
            .iter()
            .map(|&i| &doc.configs[i])
            .filter(|c| c.params.get("gpu").map_or("", String::as_str) == gpu)
            .collect();
        let mut tables = Vec::new();
        let mut left_out = Vec::new();
        let mut loads = BTreeSet::new();
        let mut routers = BTreeSet::new();
        for c in &mine {
            let sc = c.serve_command.as_ref();
            match sc.and_then(|s| s.command.as_deref()) {
                Some(cmd) => {
                    tables.push(table(c, cmd));
                    loads.extend(c.points.iter().filter_map(|p| match p.load {
                        Load::Concurrency(n) => Some(n),
                        Load::Rate(_) => None,
                    }));
                    routers.extend(c.params.get("router").cloned());
                }
                None => left_out.push(format!(
                    "{}: {}",
                    c.id,
                    sc.and_then(|s| s.missing.as_deref()).unwrap_or("no command")
                )),
            }
        }
        let price = mine.iter().find_map(|c| c.gpu_hour_usd);
        let sweep = sweep_command(&path, cx, &loads, doc.slo.as_deref(), price);
        // A header line is a comment to its end: a line break in a name
        // (a model's, a path's) would end it and start TOML.
        let comment = |t: &str| t.chars().map(|c| if c.is_control() { '?' } else { c }).collect::<String>();
        let mut text = comment(&format!(
            "# goodput plan's frontier for {} on {gpu}: {} of its configurations, each started with vLLM (launch).",
            doc.model,
            tables.len()
        ));
        text.push('\n');
        let _ = writeln!(text, "# Measure them on a machine with these GPUs, and set the measurement beside the plan:");
        let _ = writeln!(text, "#   {}", comment(&sweep));
        if let Some(plan) = cx.plan_output {
            let measured = measured_path(&path);
            let words = [plan.display().to_string(), measured.display().to_string()];
            let _ = writeln!(text, "#   goodput compare {}", comment(&shell_words(&words)));
        }
        if cx.trace.is_some() {
            let _ = writeln!(
                text,
                "# The plan replayed a trace: give the sweep the loads to measure (--concurrency or --rate) where the \
                 plan's points are."
            );
        }
        if !routers.is_empty() {
            let _ = writeln!(
                text,
                "# vLLM balances its data-parallel ranks its own way: the plan's router ({}) is not set.",
                routers.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
        if !left_out.is_empty() {
            let _ = writeln!(text, "# Left out, with no one vLLM command:");
            for l in &left_out {
                let _ = writeln!(text, "#   {}", comment(l));
            }
        }
        for t in &tables {
            text.push('\n');
            text.push_str(t);
        }
        if tables.is_empty() {
            text.push_str("\n# No configuration of this GPU has one vLLM command: the file has none to sweep.\n");
        }
        goodput_report::write_atomic(&path, text.trim_end().as_bytes())
            .with_context(|| format!("--grid-out: writing {}", path.display()))?;
        grids.push(Grid { path, gpu, configs: tables.len(), left_out, sweep });
    }
    Ok(grids)
}

/// `grid.toml` → `grid.measured.json`.
fn measured_path(grid: &Path) -> PathBuf {
    let stem = grid.file_stem().map_or_else(|| "grid".into(), |s| s.to_string_lossy().into_owned());
    grid.with_file_name(format!("{stem}.measured.json"))
}

/// The sweep of one grid: its servers started by `sh -c {launch} {port}`,
/// the plan's workload and SLO, the loads of the plan's points, and
/// --estimate, which predicts the same grid again and compares.
fn sweep_command(
    grid: &Path,
    cx: &SweepContext,
    loads: &BTreeSet<u64>,
    slo: Option<&str>,
    price: Option<f64>,
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
    if cx.trace.is_none() && !loads.is_empty() {
        let list: Vec<String> = thin(loads).iter().map(u64::to_string).collect();
        w.extend(["--concurrency".into(), list.join(",")]);
    }
    w.extend(cx.workload.iter().cloned());
    if let Some(s) = slo {
        w.extend(["--slo".into(), s.to_string()]);
    }
    if let Some(p) = price {
        w.extend(["--gpu-hour-usd".into(), p.to_string()]);
    }
    w.extend(["--estimate".into(), "-o".into(), measured_path(grid).display().to_string()]);
    shell_words(&w)
}

/// At most eight loads, the least and the most kept, the rest spread
/// evenly among them: each load is every configuration's point, and each
/// point of a 70B's server takes minutes.
fn thin(loads: &BTreeSet<u64>) -> Vec<u64> {
    let all: Vec<u64> = loads.iter().copied().collect();
    if all.len() <= 8 {
        return all;
    }
    let last = all.len() - 1;
    let mut out: Vec<u64> = (0..8).map(|k| all[k * last / 7]).collect();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(kv: &[(&str, &str)]) -> ParamMap {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
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
        let w = vllm_words(&p, "meta-llama/Llama-3.1-70B-Instruct", "llama-3.1-70b", 0.9).unwrap();
        assert_eq!(
            shell_words(&w),
            "vllm serve meta-llama/Llama-3.1-70B-Instruct --served-model-name llama-3.1-70b --quantization fp8 \
             --tensor-parallel-size 2 --data-parallel-size 2 --kv-cache-dtype fp8 --max-num-seqs 256 \
             --max-num-batched-tokens 8192 --gpu-memory-utilization 0.9"
        );
        // BF16 names its dtype; a served name equal to the weights' is not repeated; one GPU has no TP flag.
        let p = params(&[("tp", "1"), ("dp", "1"), ("precision", "bf16"), ("kv_cache_dtype", "auto")]);
        assert_eq!(
            shell_words(&vllm_words(&p, "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 0.85).unwrap()),
            "vllm serve Qwen/Qwen2.5-7B-Instruct --dtype bfloat16 --gpu-memory-utilization 0.85"
        );
        // Experts over every TP × DP GPU is vLLM's one layout.
        let ep = params(&[("tp", "1"), ("dp", "8"), ("ep", "8"), ("pp", "2"), ("precision", "fp8")]);
        let w = vllm_words(&ep, "x", "x", 0.9).unwrap();
        assert!(w.contains(&"--enable-expert-parallel".to_string()) && w.contains(&"--pipeline-parallel-size".into()));
        let why = |kv: &[(&str, &str)]| vllm_flags(&params(kv), 0.9).unwrap_err();
        assert!(why(&[("tp", "1"), ("dp", "8"), ("ep", "4")]).contains("all 8 GPUs of TP × DP"));
        assert!(why(&[("precision", "fp4")]).contains("NVFP4 checkpoint"));
        assert!(why(&[("precision", "int4")]).contains("AWQ or GPTQ"));
        assert!(why(&[("pd", "1:1")]).contains("--kv-transfer-config"));
        assert!(why(&[("spec_tokens", "3"), ("spec_acceptance", "0.6")]).contains("assumed 0.6"));
        // No draft tokens is no drafting.
        assert!(vllm_flags(&params(&[("spec_tokens", "0")]), 0.9).is_ok());
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

    /// A plan's frontier of three configurations over two GPU types, one
    /// of them disaggregated: a grid per type, the disaggregated one left
    /// out with its reason, and the sweep's command with the plan's SLO,
    /// price and workload.
    #[test]
    fn the_grid_holds_what_vllm_starts_and_names_what_it_cannot() {
        use goodput_core::doc::frontier::{FrontierSource, PointId};
        let knobs = |gpu: &str, tp: &str| {
            params(&[("gpu", gpu), ("tp", tp), ("dp", "1"), ("precision", "fp8"), ("max_num_seqs", "64")])
        };
        let mut pd = knobs("h200", "1");
        pd.insert("pd".into(), "1:1".into());
        let tool = crate::common::tool();
        let mut doc = FrontierResult {
            // A line break in a name stays in its comment.
            model: "Llama-3.1-8B\n[x]".into(),
            slo: Some("tpot:p90<=40ms".into()),
            configs: vec![
                FrontierConfig::new("h100 tp1".into(), knobs("h100-sxm", "1"), None, 1, Some(2.0)),
                FrontierConfig::new("h200 tp2".into(), knobs("h200", "2"), None, 2, Some(3.0)),
                FrontierConfig::new("h200 1P+1D".into(), pd, None, 2, Some(3.0)),
            ],
            frontier: (0..3).map(|config| PointId { config, point: 0 }).collect(),
            ..FrontierResult::new(tool, FrontierSource::Predicted, 0.9, 90.0)
        };
        set_commands(&mut doc, Some("meta-llama/Llama-3.1-8B-Instruct"), "llama-3.1-8b", 0.9);
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
        assert_eq!(grids.iter().map(|g| (g.configs, g.left_out.len())).collect::<Vec<_>>(), [(1, 0), (1, 1)]);
        let h200 = std::fs::read_to_string(&grids[1].path).unwrap();
        assert!(h200.contains("#   h200 1P+1D: prefill apart from decode (1:1)"), "{h200}");
        assert!(h200.contains("#   goodput compare plan.json "), "{h200}");
        assert!(
            grids[1].sweep.contains("--model llama-3.1-8b --input-tokens 512 --slo 'tpot:p90<=40ms' --gpu-hour-usd 3"),
            "{}",
            grids[1].sweep
        );
        let parsed: toml::Table = toml::from_str(&h200).unwrap();
        assert_eq!(parsed.keys().collect::<Vec<_>>(), ["config"], "{h200}");
        let table = &parsed["config"].as_array().unwrap()[0];
        assert_eq!((table["id"].as_str(), table["tp"].as_integer()), (Some("h200 tp2"), Some(2)));
        assert!(table["launch"].as_str().unwrap().ends_with("--host 127.0.0.1 --port \"$0\""));
        // No frontier, no grid.
        doc.frontier.clear();
        assert!(write_grids(&doc, &dir.path().join("h.toml"), &cx).unwrap_err().to_string().contains("no frontier"));
    }

    #[test]
    fn a_long_list_of_loads_is_thinned_to_eight_with_its_ends() {
        let loads: BTreeSet<u64> = (0..12).map(|k| 1u64 << k).collect();
        let t = thin(&loads);
        assert_eq!(t.len(), 8);
        assert_eq!((t[0], t[7]), (1, 2048));
        assert_eq!(thin(&[1, 4].into_iter().collect()), [1, 4]);
    }
}
