//! TensorRT-LLM's commands (`plan --serve-engine trtllm`): `trtllm-serve`
//! on its PyTorch backend, with the options it takes only from a YAML file
//! (`--config`: attention data parallelism, the KV cache's share and dtype,
//! the drafts, its Prometheus metrics) written by the script that starts
//! it; prefill apart from decode as context and generation servers behind
//! `trtllm-serve disaggregated`. The names are TensorRT-LLM's
//! (`tensorrt_llm/commands/serve.py`, `llmapi/llm_args.py`,
//! `llmapi/disagg_utils.py`, `serve/router.py`).
//!
//! Replicas of a whole model (trtllm-serve serves one) are servers of their
//! own behind SMG (the Shepherd Model Gateway, `smg launch --worker-urls`),
//! as NVIDIA's srt-slurm recipes front trtllm-serve workers: its
//! `round_robin`, `cache_aware` or `power_of_two` (which, trtllm-serve
//! reporting no load for it to poll, compares the requests it has in
//! flight to each) for the plan's round-robin, prefix-aware and
//! least-loaded or power-of-two.
//!
//! What it does not start: a layout whose ranks of attention data
//! parallelism each span several GPUs (its attention DP runs a rank's
//! attention on one), EAGLE-1/2 heads, AMD's GPUs, and quantized weights
//! other than NVIDIA ModelOpt's FP8 and NVFP4 checkpoints unless given
//! (`--serve-checkpoint`).

use super::{health_wait, serve_words, server_gpus, servers_preamble, shell_words, sizes, while_alive};
use super::{Drafter, Role, Server, Servers, Weights};
use goodput_core::doc::config::ep_ranks;
use goodput_core::doc::frontier::ParamMap;
use goodput_sim::engine::GpuSpec;
use std::fmt::Write as _;

/// The end of each options file's here-document: no line of the options
/// can be it (every value is quoted, or a number, after its key).
const END: &str = "GOODPUT_TRTLLM_OPTIONS";

/// trtllm-serve's flags for a configuration's layout and limits: TP (every
/// GPU of the server under attention data parallelism), PP, EP, each
/// rank's `--max_batch_size` and `--max_num_tokens` (TensorRT-LLM's limits
/// are a rank's, as the engine's are), and chunked prefill, which the plan
/// predicted and trtllm-serve leaves off unless asked; or why it has none.
pub(super) fn flags(params: &ParamMap) -> Result<Vec<String>, String> {
    let (tp, ep, pp, dp) = sizes(params);
    let ranks = ep_ranks(tp, ep);
    // Replicas are servers of their own (`command`), each of one group.
    if dp > ranks {
        return Err(format!(
            "{} data-parallel replicas behind the router {}: trtllm-serve serves one replica a server, started \
             behind SMG by the plan's router, and this is none SMG has (round-robin, least-loaded, prefix-aware, \
             power-of-two)",
            dp / ranks,
            params.get("router").map_or("(none)", |r| r.trim())
        ));
    }
    let attention_dp = ep > 1 && ranks > 1;
    if attention_dp && tp > 1 {
        return Err(format!(
            "expert parallel over {ep} GPUs with TP {tp} a rank: TensorRT-LLM's attention data parallelism \
             (enable_attention_dp) runs each rank's attention on one GPU, its experts over all of them; plan TP 1 \
             with --ep {ep}, or EP {tp} (the experts over each TP group)"
        ));
    }
    if ep > 1 && !attention_dp && tp % ep != 0 {
        return Err(format!(
            "expert parallel over {ep} GPUs with TP {tp}: TensorRT-LLM splits a TP group's experts as EP × MoE \
             TP, so its --ep_size divides --tp_size"
        ));
    }
    let width = if attention_dp { ranks } else { tp };
    let mut f = Vec::new();
    for (flag, n) in [("--tp_size", width), ("--pp_size", pp), ("--ep_size", ep)] {
        if n > 1 {
            f.extend([flag.to_string(), n.to_string()]);
        }
    }
    let get = |k: &str| params.get(k).map(|v| v.trim().to_string());
    if let Some(v) = get("max_num_seqs") {
        f.extend(["--max_batch_size".into(), v]);
    }
    if let Some(v) = get("max_num_batched_tokens") {
        f.extend(["--max_num_tokens".into(), v]);
    }
    f.push("--enable_chunked_prefill".into());
    Ok(f)
}

/// The options file of a server of a configuration (`role`: a prefill or
/// decode instance's, where disaggregated), as YAML lines:
/// - `return_perf_metrics`, for its Prometheus metrics (at
///   /prometheus/metrics; its /metrics serves JSON), and
///   `enable_iter_perf_stats`, for their queue and KV-cache gauges;
/// - `enable_attention_dp` where its ranks' attention runs apart;
/// - `cuda_graph_config`: CUDA graphs padded up to the batch cap
///   (`enable_padding`, `max_batch_size` the configuration's
///   `--max_batch_size`), as TensorRT-LLM's recipes run decode;
/// - `kv_cache_config`: the share of the free memory its KV cache takes
///   (the plan's `--gpu-memory-utilization`, which the engine reads so
///   under TensorRT-LLM's scheduler), and `dtype: fp8` for an FP8 cache
///   (the file's `kv_cache_config` replaces the flags' whole, so both are
///   here);
/// - `speculative_config`: EAGLE-3 (`Eagle3`), a draft model
///   (`DraftTarget`) or DeepSeek's MTP layers (`MTP`), `k` tokens a step;
/// - disaggregated: `cache_transceiver_config` (the KV cache carried by
///   TensorRT-LLM's default transceiver), and on a prefill instance
///   `disable_overlap_scheduler`, as TensorRT-LLM's own examples run them.
pub(super) fn options(
    params: &ParamMap,
    drafter: Option<&Drafter>,
    mem: Option<f64>,
    role: Option<Role>,
) -> Result<Vec<String>, String> {
    let get = |k: &str| params.get(k).map(|v| v.trim());
    let (tp, ep, _, _) = sizes(params);
    let mut o = vec!["return_perf_metrics: true".to_string(), "enable_iter_perf_stats: true".to_string()];
    if ep > 1 && ep_ranks(tp, ep) > 1 {
        o.push("enable_attention_dp: true".into());
    }
    // Decode steps replayed as CUDA graphs up to the batch cap, padded to
    // the nearest graph's size, as TensorRT-LLM's deployment recipes and
    // the published runs the engine was checked on set them.
    o.extend(["cuda_graph_config:".into(), "  enable_padding: true".into()]);
    if let Some(seqs) = get("max_num_seqs") {
        o.push(format!("  max_batch_size: {seqs}"));
    }
    o.push("kv_cache_config:".into());
    // Its own default where none was given, written out: the section has
    // a key either way.
    let mem = mem.unwrap_or(goodput_sim::engine::DEFAULT_GPU_MEMORY_UTILIZATION);
    o.push(format!("  free_gpu_memory_fraction: {mem}"));
    if get("kv_cache_dtype").is_some_and(|v| v.eq_ignore_ascii_case("fp8")) {
        o.push("  dtype: fp8".into());
    }
    let drafts = get("spec_tokens").and_then(|k| k.parse::<u32>().ok()).filter(|&k| k > 0);
    if let Some(k) = drafts {
        let quoted = |m: &str| serde_json::Value::String(m.to_string()).to_string();
        o.push("speculative_config:".into());
        match drafter {
            Some(Drafter::Eagle3(m)) => o.extend([
                "  decoding_type: Eagle3".into(),
                format!("  max_draft_len: {k}"),
                format!("  speculative_model: {}", quoted(m)),
            ]),
            Some(Drafter::Model(m)) => o.extend([
                "  decoding_type: DraftTarget".into(),
                format!("  max_draft_len: {k}"),
                format!("  speculative_model: {}", quoted(m)),
            ]),
            Some(Drafter::Mtp) => o.extend(["  decoding_type: MTP".into(), format!("  num_nextn_predict_layers: {k}")]),
            Some(Drafter::Eagle(_)) => {
                return Err(format!(
                    "speculative decoding ({k} draft tokens) with an EAGLE head: TensorRT-LLM's PyTorch backend \
                     drafts with EAGLE-3 heads, a draft model or DeepSeek's MTP layers; give --serve-drafter \
                     eagle3=WEIGHTS or draft=WEIGHTS"
                ))
            }
            None => {
                return Err(format!(
                    "speculative decoding ({k} draft tokens): TensorRT-LLM needs the drafter named, and none is \
                     known here for these weights: give one as --serve-drafter eagle3=WEIGHTS (an EAGLE-3 head), \
                     draft=WEIGHTS (a smaller model) or mtp (the model's own layers); its acceptance decides the \
                     speed, and the plan assumed {}",
                    get("spec_acceptance").unwrap_or("0.7")
                ))
            }
        }
    }
    // Without the overlap scheduler where the plan predicted none, and on
    // a prefill instance always, as TensorRT-LLM's disaggregated examples
    // run it (the engine's prefill pool does the same).
    let no_overlap = get("async_scheduling").and_then(goodput_core::doc::overlay::switch_value) == Some(false);
    if let Some(role) = role.filter(|r| *r != Role::Replica) {
        o.extend(["cache_transceiver_config:".into(), "  backend: DEFAULT".into()]);
        if role == Role::Prefill || no_overlap {
            o.push("disable_overlap_scheduler: true".into());
        }
    } else if no_overlap {
        o.push("disable_overlap_scheduler: true".into());
    }
    Ok(o)
}

/// `cat > FILE <<'END'`, the lines, `END`: a file the shell writes as is.
fn written(file: &str, lines: &[String]) -> String {
    format!("cat > {file} <<'{END}'\n{}\n{END}\n", lines.join("\n"))
}

/// The script that starts a configuration on TensorRT-LLM, or why there
/// is none: one `trtllm-serve` on `$PORT`, its options written to a file
/// first (removed when it ends); or several servers ([`servers_script`]):
/// disaggregated, every unit's prefill (context) and decode (generation)
/// servers behind `trtllm-serve disaggregated`, which picks each pool's
/// server by its `load_balancing` router (the fewest requests in flight,
/// ties in turn: the plan's least-loaded, which its pools are predicted
/// with under TensorRT-LLM); replicas, behind SMG by the plan's router.
pub(super) fn command(
    params: &ParamMap,
    weights: &Weights,
    drafter: Option<&Drafter>,
    named: &str,
    mem: Option<f64>,
) -> Result<String, String> {
    if let Some(gpu) = params.get("gpu").and_then(|g| GpuSpec::lookup(g).ok()).filter(|g| g.family.is_amd()) {
        return Err(format!(
            "{}: TensorRT-LLM runs on NVIDIA's GPUs alone; plan it with --serve-engine vllm or sglang",
            gpu.name
        ));
    }
    if let Some(pools) = Servers::pools(params).transpose()? {
        return servers_script(&pools, weights, drafter, named, mem);
    }
    if let Some(replicas) = Servers::replicas(Server::Trtllm, params) {
        return servers_script(&replicas, weights, drafter, named, mem);
    }
    let words = serve_words(Server::Trtllm, params, weights, drafter, named, mem)?;
    let options = options(params, drafter, mem, None)?;
    let (tp, ep, pp, _) = sizes(params);
    let gpus = server_gpus(tp, ep, pp);
    let mut s = format!(
        "# TensorRT-LLM's trtllm-serve on {gpus} GPU{}, with the options it takes from a file (--config) written to \
         one first, removed when it ends.\n\
         # It listens on $PORT (8000 when unset) on 127.0.0.1, its Prometheus metrics at /prometheus/metrics.\n\
         port=${{PORT:-8000}}\n\
         config=$(mktemp \"${{TMPDIR:-/tmp}}/goodput-trtllm.XXXXXX\") || exit 1\n\
         trap 'rm -f \"$config\"' EXIT\ntrap 'exit 1' INT TERM\n",
        if gpus == 1 { "" } else { "s" }
    );
    s.push_str(&written("\"$config\"", &options));
    let _ = writeln!(s, "{} --config \"$config\" --host 127.0.0.1 --port \"$port\"", shell_words(&words));
    Ok(s)
}

/// Several servers, each a `trtllm-serve` on GPUs of its own with its own
/// options file, then, once every one answers /health, the router on
/// `$PORT`: prefill apart from decode, `trtllm-serve disaggregated` with
/// its context and generation servers named in a file of its own;
/// replicas, SMG by the plan's router (`servers.policy`), its metrics on
/// the port after the servers'.
fn servers_script(
    servers: &Servers,
    weights: &Weights,
    drafter: Option<&Drafter>,
    named: &str,
    mem: Option<f64>,
) -> Result<String, String> {
    let n = servers.instances.len();
    let gpus = servers.gpus();
    let mut s = match servers.policy {
        None => format!(
            "# {} prefill (context) and {} decode (generation) TensorRT-LLM servers on {gpus} GPUs, the KV cache \
             carried by each one's cache transceiver, behind trtllm-serve disaggregated, which picks each pool's \
             server by its load_balancing router (the one with the fewest requests in flight).\n",
            servers.count(Role::Prefill),
            servers.count(Role::Decode),
        ),
        Some(policy) => format!(
            "# {n} TensorRT-LLM servers on {gpus} GPUs, a replica each, behind SMG (the Shepherd Model Gateway, \
             `smg launch`), which spreads requests over them by its {policy} policy{}.\n",
            match policy {
                "power_of_two" =>
                    " (of two drawn at random, the one with fewer requests in flight: trtllm-serve \
                                   reports no load of its own for it to poll)",
                _ => "",
            }
        ),
    };
    s.push_str(
        "# The router listens on $PORT (8000 when unset), the servers on the ports after it, each with its \
         Prometheus metrics at /prometheus/metrics; their options files are in a folder removed when it ends.\n",
    );
    let setup = "dir=$(mktemp -d \"${TMPDIR:-/tmp}/goodput-trtllm.XXXXXX\") || exit 1\n";
    s.push_str(&servers_preamble(gpus, setup, "; rm -rf \"$dir\""));
    let (mut first, mut context, mut generation) = (0u32, Vec::new(), Vec::new());
    for (i, (role, params, used)) in servers.instances.iter().enumerate() {
        let listen = i + 1;
        let file = format!("\"$dir/server-{listen}.yaml\"");
        s.push_str(&written(&file, &options(params, drafter, mem, Some(*role))?));
        let words = serve_words(Server::Trtllm, params, weights, drafter, named, mem)?;
        let _ = writeln!(
            s,
            "CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f{}-{}) {} --config {file} --host 127.0.0.1 \
             --port $((port + {listen})) &\npids=\"$pids $!\"",
            first + 1,
            first + used,
            shell_words(&words)
        );
        let url = match servers.policy {
            None => format!("    - \"127.0.0.1:$((port + {listen}))\""),
            Some(_) => format!("http://127.0.0.1:$((port + {listen}))"),
        };
        match role {
            Role::Prefill => context.push(url),
            _ => generation.push(url),
        }
        first += used;
    }
    s.push_str(&health_wait(n));
    // Replicas: SMG in front, its own metrics on the port after the servers'
    // (its default, 29000, the last configuration's router may still hold).
    if let Some(policy) = servers.policy {
        let _ = write!(
            s,
            "smg launch --worker-urls {} --policy {policy} --host 127.0.0.1 --port \"$port\" --prometheus-port \
             $((port + {})) &\npids=\"$pids $!\"\n{}",
            generation.join(" "),
            n + 1,
            while_alive()
        );
        return Ok(s);
    }
    // Unquoted: the shell fills in the ports.
    let pool = |name: &str, urls: &[String]| {
        format!(
            "{name}:\n  num_instances: {}\n  router:\n    type: load_balancing\n  urls:\n{}\n",
            urls.len(),
            urls.join("\n")
        )
    };
    let _ = write!(
        s,
        "cat > \"$dir/router.yaml\" <<{END}\nhostname: 127.0.0.1\nport: $port\n{}{}{END}\n\
         trtllm-serve disaggregated -c \"$dir/router.yaml\" &\npids=\"$pids $!\"\n{}",
        pool("context_servers", &context),
        pool("generation_servers", &generation),
        while_alive()
    );
    Ok(s)
}

/// Where a grid's sweep reads a configuration's Prometheus metrics, and
/// the ports its script takes from `{port}` on: the one server's, or each
/// server's behind the disaggregated router (and SMG's metrics, after them,
/// in front of replicas).
pub(super) fn endpoints(params: &ParamMap) -> (Vec<String>, usize) {
    let several = Servers::pools(params).and_then(Result::ok).or_else(|| Servers::replicas(Server::Trtllm, params));
    match several {
        Some(servers) => {
            let n = servers.instances.len();
            let urls = (1..=n).map(|k| format!("http://127.0.0.1:{{port+{k}}}/prometheus/metrics")).collect();
            (urls, n + 1 + usize::from(servers.policy.is_some()))
        }
        None => (vec!["http://127.0.0.1:{port}/prometheus/metrics".into()], 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_sim::engine::Precision;

    fn params(kv: &[(&str, &str)]) -> ParamMap {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// The script of a configuration, or why it has none, for `served`
    /// (drafting by `drafter`).
    fn script(kv: &[(&str, &str)], served: &str, drafter: Option<Drafter>) -> Result<String, String> {
        let w = Weights { served: Some(served.into()), drafter, ..Weights::default() };
        command(&params(kv), &w, w.drafter().as_ref(), "named", Some(0.85))
    }

    /// The options file's lines of a script of one server.
    fn options_of(script: &str) -> Vec<&str> {
        let start = script.find(&format!("<<'{END}'\n")).expect("an options file") + END.len() + 5;
        let len = script[start..].find(&format!("\n{END}\n")).expect("its end");
        script[start..start + len].lines().collect()
    }

    #[test]
    fn one_server_is_trtllm_serve_with_its_options_file() {
        let kv = [
            ("gpu", "h100-sxm"),
            ("tp", "2"),
            ("dp", "1"),
            ("precision", "fp8"),
            ("kv_cache_dtype", "fp8"),
            ("max_num_seqs", "256"),
            ("max_num_batched_tokens", "8192"),
        ];
        let s = script(&kv, "meta-llama/Llama-3.3-70B-Instruct", None).unwrap();
        // FP8 from NVIDIA's checkpoint: TensorRT-LLM quantizes nothing as it loads.
        assert!(
            s.contains(
                "\ntrtllm-serve nvidia/Llama-3.3-70B-Instruct-FP8 --backend pytorch --served_model_name named \
                 --tp_size 2 --max_batch_size 256 --max_num_tokens 8192 --enable_chunked_prefill --config \
                 \"$config\" --host 127.0.0.1 --port \"$port\"\n"
            ),
            "{s}"
        );
        assert_eq!(
            options_of(&s),
            [
                "return_perf_metrics: true",
                "enable_iter_perf_stats: true",
                "cuda_graph_config:",
                "  enable_padding: true",
                "  max_batch_size: 256",
                "kv_cache_config:",
                "  free_gpu_memory_fraction: 0.85",
                "  dtype: fp8"
            ]
        );
        assert!(s.contains("port=${PORT:-8000}\n") && s.contains("trap 'rm -f \"$config\"' EXIT"), "{s}");
        // Planned without the overlap scheduler (its default): said in the file.
        let off = script(
            &[kv.as_slice(), &[("async_scheduling", "false")]].concat(),
            "meta-llama/Llama-3.3-70B-Instruct",
            None,
        );
        let off = off.unwrap();
        assert_eq!(options_of(&off).last(), Some(&"disable_overlap_scheduler: true"), "{off}");
        // 16-bit weights are the served ones; no TP flag on one GPU.
        let s = script(&[("tp", "1"), ("precision", "bf16")], "Qwen/Qwen2.5-7B-Instruct", None).unwrap();
        assert!(
            s.contains(
                "trtllm-serve Qwen/Qwen2.5-7B-Instruct --backend pytorch --served_model_name named \
                            --enable_chunked_prefill --config"
            ),
            "{s}"
        );
        assert_eq!(
            options_of(&s),
            [
                "return_perf_metrics: true",
                "enable_iter_perf_stats: true",
                "cuda_graph_config:",
                "  enable_padding: true",
                "kv_cache_config:",
                "  free_gpu_memory_fraction: 0.85"
            ]
        );
    }

    #[test]
    fn experts_spread_over_attention_ranks_or_within_tp() {
        let flags_of = |kv: &[(&str, &str)]| flags(&params(kv)).map(|f| f.join(" "));
        // Attention data parallel over eight ranks of one GPU, the experts over all.
        let kv = [("tp", "1"), ("dp", "8"), ("ep", "8"), ("precision", "fp4")];
        assert!(flags_of(&kv).unwrap().starts_with("--tp_size 8 --ep_size 8 "), "{:?}", flags_of(&kv));
        let s = script(&kv, "deepseek-ai/DeepSeek-R1", None).unwrap();
        assert!(s.contains("trtllm-serve nvidia/DeepSeek-R1-FP4 "), "{s}");
        assert!(options_of(&s).contains(&"enable_attention_dp: true"), "{s}");
        // EP within a TP group: MoE TP × EP = TP, no attention DP.
        let kv = [("tp", "4"), ("dp", "1"), ("ep", "2")];
        assert!(flags_of(&kv).unwrap().starts_with("--tp_size 4 --ep_size 2 "), "{:?}", flags_of(&kv));
        assert!(!options_of(&script(&kv, "x/y", None).unwrap()).contains(&"enable_attention_dp: true"));
        // What it does not start, and why.
        let why = |kv: &[(&str, &str)]| flags_of(kv).unwrap_err();
        assert!(why(&[("tp", "2"), ("dp", "4"), ("ep", "8")]).contains("runs each rank's attention on one GPU"));
        assert!(why(&[("tp", "4"), ("dp", "1"), ("ep", "3")]).contains("divides --tp_size"));
        assert!(why(&[("tp", "2"), ("dp", "4"), ("router", "sticky")]).starts_with("4 data-parallel replicas behind"));
        let amd = script(&[("gpu", "mi300x"), ("precision", "fp8")], "meta-llama/Llama-3.3-70B-Instruct", None);
        assert!(amd.unwrap_err().starts_with("MI300X: TensorRT-LLM runs on NVIDIA's GPUs alone"));
    }

    #[test]
    fn its_weights_are_nvidias_checkpoints_or_given() {
        let why = |kv: &[(&str, &str)], served: &str| script(kv, served, None).unwrap_err();
        assert!(why(&[("precision", "fp8")], "my-org/tuned").contains("quantizing nothing as it loads"));
        // The published AWQ and W8A16 checkpoints are not ModelOpt's.
        let int4 = why(&[("precision", "int4")], "meta-llama/Llama-3.1-70B-Instruct");
        assert!(int4.starts_with("INT4 weights: TensorRT-LLM loads them from a checkpoint NVIDIA ModelOpt"), "{int4}");
        let s = script(&[("precision", "fp4")], "meta-llama/Llama-3.3-70B-Instruct", None).unwrap();
        assert!(s.contains("trtllm-serve nvidia/Llama-3.3-70B-Instruct-NVFP4 "), "{s}");
        // A checkpoint given is loaded at its width.
        let w = Weights {
            served: Some("my-org/tuned".into()),
            checkpoints: vec![(Precision::Fp8, "my-org/tuned-fp8".into())],
            ..Weights::default()
        };
        let s = command(&params(&[("precision", "fp8")]), &w, None, "my-org/tuned-fp8", Some(0.9)).unwrap();
        assert!(s.contains("trtllm-serve my-org/tuned-fp8 --backend pytorch --enable_chunked_prefill"), "{s}");
    }

    #[test]
    fn drafts_are_its_speculative_config() {
        let spec = [("spec_tokens", "3"), ("spec_acceptance", "0.6")];
        let s = script(&spec, "meta-llama/Llama-3.1-8B-Instruct", None).unwrap();
        let o = options_of(&s);
        assert!(
            o.ends_with(&[
                "speculative_config:",
                "  decoding_type: Eagle3",
                "  max_draft_len: 3",
                "  speculative_model: \"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B\"",
            ]),
            "{o:?}"
        );
        let s = script(&spec, "deepseek-ai/DeepSeek-R1", None).unwrap();
        assert!(options_of(&s).ends_with(&["  decoding_type: MTP", "  num_nextn_predict_layers: 3"]), "{s}");
        let s = script(&spec, "x/y", Some(Drafter::Model("x/small".into()))).unwrap();
        assert!(options_of(&s).contains(&"  decoding_type: DraftTarget"), "{s}");
        let eagle = script(&spec, "x/y", Some(Drafter::Eagle("x/head".into()))).unwrap_err();
        assert!(eagle.contains("drafts with EAGLE-3 heads, a draft model or DeepSeek's MTP"), "{eagle}");
        assert!(script(&spec, "x/y", None).unwrap_err().contains("the plan assumed 0.6"));
    }

    /// A whole model's replicas: a server each, on GPUs of its own, with its
    /// own options file, behind SMG by the plan's router (least-loaded, and
    /// none named, its power_of_two, as the plan predicts them).
    #[test]
    fn replicas_are_servers_of_their_own_behind_smg() {
        let kv = [("tp", "2"), ("dp", "4"), ("precision", "fp8")];
        let s = script(&kv, "meta-llama/Llama-3.3-70B-Instruct", None).unwrap();
        assert!(s.starts_with("# 4 TensorRT-LLM servers on 8 GPUs, a replica each, behind SMG"), "{s}");
        assert!(s.contains("CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f7-8) trtllm-serve \
                            nvidia/Llama-3.3-70B-Instruct-FP8 --backend pytorch --served_model_name named --tp_size 2 \
                            --enable_chunked_prefill --config \"$dir/server-4.yaml\" --host 127.0.0.1 --port $((port + 4)) &"), "{s}");
        assert!(
            s.contains(
                "smg launch --worker-urls http://127.0.0.1:$((port + 1)) http://127.0.0.1:$((port + 2)) \
                 http://127.0.0.1:$((port + 3)) http://127.0.0.1:$((port + 4)) --policy power_of_two --host 127.0.0.1 \
                 --port \"$port\" --prometheus-port $((port + 5)) &"
            ),
            "{s}"
        );
        for (router, policy) in
            [("round-robin", "round_robin"), ("prefix-aware", "cache_aware"), ("least-loaded", "power_of_two")]
        {
            let mut kv = kv.to_vec();
            kv.push(("router", router));
            let s = script(&kv, "meta-llama/Llama-3.3-70B-Instruct", None).unwrap();
            assert!(s.contains(&format!(" --policy {policy} ")), "{router}: {s}");
        }
        // Each replica's options are a colocated server's: no cache transceiver.
        assert!(!s.contains("cache_transceiver_config"), "{s}");
        let (metrics, ports) = endpoints(&params(&kv));
        assert_eq!((metrics.len(), ports), (4, 6), "four servers, the router and its metrics");
        // Expert-parallel groups are replicas too.
        let s = script(&[("tp", "1"), ("dp", "4"), ("ep", "2")], "x/y", None).unwrap();
        assert!(s.starts_with("# 2 TensorRT-LLM servers on 4 GPUs") && s.contains("--tp_size 2 --ep_size 2 "), "{s}");
    }

    /// Prefill apart from decode: context and generation servers, each with
    /// its own options file (the cache transceiver on both, the overlap
    /// scheduler off on the context ones), and the disaggregated router in
    /// front with both pools named.
    #[test]
    fn pools_are_context_and_generation_servers_behind_its_router() {
        let kv = [("tp", "1"), ("dp", "2"), ("pd", "1:1"), ("precision", "fp8"), ("max_num_seqs", "64")];
        let s = script(&kv, "meta-llama/Llama-3.1-8B-Instruct", None).unwrap();
        assert!(s.starts_with("# 2 prefill (context) and 2 decode (generation) TensorRT-LLM servers on 4 GPUs"), "{s}");
        for k in 1..=4 {
            let file = format!("cat > \"$dir/server-{k}.yaml\" <<'{END}'\n");
            let at = s.find(&file).unwrap_or_else(|| panic!("{file} in {s}"));
            let lines = options_of(&s[at..]);
            assert!(
                lines.ends_with(&[
                    "cache_transceiver_config:",
                    "  backend: DEFAULT",
                    "disable_overlap_scheduler: true"
                ]) == (k <= 2),
                "{k}: {lines:?}"
            );
            assert!(
                s.contains(&format!(
                "--enable_chunked_prefill --config \"$dir/server-{k}.yaml\" --host 127.0.0.1 --port $((port + {k})) &"
            )),
                "{s}"
            );
        }
        assert!(s.contains("CUDA_VISIBLE_DEVICES=$(echo \"$visible\" | cut -d, -f4-4) trtllm-serve"), "{s}");
        assert!(
            s.contains(&format!(
                "cat > \"$dir/router.yaml\" <<{END}\nhostname: 127.0.0.1\nport: $port\ncontext_servers:\n  \
                 num_instances: 2\n  router:\n    type: load_balancing\n  urls:\n    - \"127.0.0.1:$((port + 1))\"\n    - \
                 \"127.0.0.1:$((port + 2))\"\ngeneration_servers:\n  num_instances: 2\n"
            )),
            "{s}"
        );
        assert!(s.contains("trtllm-serve disaggregated -c \"$dir/router.yaml\" &"), "{s}");
        assert!(s.contains("trap 'kill $pids 2>/dev/null; rm -rf \"$dir\"' EXIT"), "{s}");
        let (metrics, ports) = endpoints(&params(&kv));
        assert_eq!(ports, 5);
        assert_eq!(metrics[3], "http://127.0.0.1:{port+4}/prometheus/metrics");
        assert_eq!(endpoints(&params(&[("tp", "2")])), (vec!["http://127.0.0.1:{port}/prometheus/metrics".into()], 1));
    }

    /// The script as a POSIX shell runs it, with a `trtllm-serve` of our own
    /// on the PATH that keeps its arguments and the options file it was
    /// given: the file is written whole, is YAML, reaches the server, and
    /// is gone when the script ends; the port is `$PORT`'s.
    #[test]
    fn the_script_writes_its_options_and_removes_them() {
        let dir = tempfile::tempdir().unwrap();
        let (bin, tmp) = (dir.path().join("bin"), dir.path().join("tmp"));
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let server = bin.join("trtllm-serve");
        std::fs::write(
            &server,
            "#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done > \"$OUT/args\"\n\
             while [ $# -gt 0 ]; do [ \"$1\" = --config ] && cp \"$2\" \"$OUT/options.yaml\"; shift; done\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&server, std::fs::Permissions::from_mode(0o755)).unwrap();
        let kv = [("tp", "1"), ("dp", "4"), ("ep", "4"), ("kv_cache_dtype", "fp8"), ("spec_tokens", "2")];
        let s = script(&kv, "deepseek-ai/DeepSeek-R1", None).unwrap();
        let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
        let out = std::process::Command::new("sh")
            .args(["-c", &s])
            .env("PATH", path)
            .env("PORT", "18123")
            .env("TMPDIR", &tmp)
            .env("OUT", dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
        let args: Vec<&str> = args.lines().collect();
        assert_eq!(&args[..2], ["deepseek-ai/DeepSeek-R1", "--backend"]);
        assert!(args.ends_with(&["--host", "127.0.0.1", "--port", "18123"]), "{args:?}");
        let yaml: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(dir.path().join("options.yaml")).unwrap()).unwrap();
        assert_eq!(yaml["enable_attention_dp"], serde_yaml_ng::Value::Bool(true));
        assert_eq!(yaml["cuda_graph_config"]["enable_padding"], serde_yaml_ng::Value::Bool(true));
        assert_eq!(yaml["kv_cache_config"]["dtype"].as_str(), Some("fp8"));
        assert_eq!(yaml["kv_cache_config"]["free_gpu_memory_fraction"].as_f64(), Some(0.85));
        assert_eq!(yaml["speculative_config"]["decoding_type"].as_str(), Some("MTP"));
        assert_eq!(yaml["speculative_config"]["num_nextn_predict_layers"].as_u64(), Some(2));
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the options file is removed when it ends");
        // The script of several servers is one a POSIX shell reads.
        let pools = script(&[("tp", "1"), ("pd", "2:1"), ("spec_tokens", "2")], "deepseek-ai/DeepSeek-R1", None);
        let check = std::process::Command::new("sh").args(["-n", "-c", &pools.unwrap()]).output().unwrap();
        assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    }
}
