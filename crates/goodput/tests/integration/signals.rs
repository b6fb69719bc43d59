//! A bench against the simulated engine reports the engine's own counters
//! over the window: preemptions, prefix-cache queries and hits (and so the
//! hit rate), with KV use and queue depth sampled from its gauges; a
//! shared-prefix workload shows its hit rate, and the diagnosis names the
//! KV pressure it causes.

use crate::cmd::GoodputCommand;
use assert_cmd::Command;
use goodput_sim::engine::EngineConfig;
use goodput_sim::engine_server::{EngineServer, EngineServerConfig};
use serde_json::Value;
use std::sync::Arc;

fn start(blocks: Option<u32>) -> (tokio::runtime::Runtime, String, Arc<EngineServer>) {
    start_serving(blocks, &[])
}

/// The engine, also serving `more` names (LoRA adapters beside its base model).
fn start_serving(blocks: Option<u32>, more: &[&str]) -> (tokio::runtime::Runtime, String, Arc<EngineServer>) {
    start_engine(|cfg| cfg.num_gpu_blocks_override = blocks, more)
}

/// Llama-3.1-8B on an H100 as `set` changes it, also serving `more` names.
fn start_engine(
    set: impl FnOnce(&mut EngineConfig),
    more: &[&str],
) -> (tokio::runtime::Runtime, String, Arc<EngineServer>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, server) = rt.block_on(async {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100-sxm", "bf16".parse().unwrap()).unwrap();
        set(&mut cfg);
        let more_model_names = more.iter().map(|m| m.to_string()).collect();
        let server =
            EngineServer::start(EngineServerConfig { speed: 4.0, more_model_names, ..EngineServerConfig::new(cfg) })
                .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = goodput_sim::engine_server::app(server.clone());
        tokio::spawn(goodput_sim::server::serve(listener, app, std::future::pending()));
        (url, server)
    });
    (rt, url, server)
}

#[test]
fn server_signals_equal_the_engines_counters_over_the_window() {
    // A small KV cache (160 blocks of 16 tokens) that 12 long requests overflow.
    let (_rt, url, server) = start(Some(160));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--url", &url, "-n", "36", "-c", "12", "--input-tokens", "64", "--output-tokens", "200"])
        .args(["--shared-prefix-tokens", "128", "--metrics-interval", "200ms"])
        .arg("-o")
        .arg(&out)
        .arg("--records")
        .arg(dir.path().join("rec.jsonl"))
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let st = server.stats();
    let sig = &v["server_signals"];
    assert_eq!(sig["engine"], "vllm");
    let w = &sig["window"];
    let delta = |name: &str| w["counters"][name]["delta"].as_f64().unwrap_or(0.0);
    assert!(st.preemptions > 0, "the small cache must preempt");
    assert_eq!(delta("preemptions"), st.preemptions as f64);
    assert_eq!(delta("prefix_cache_query_tokens"), st.prefix_cache_queries as f64);
    assert_eq!(delta("prefix_cache_hit_tokens"), st.prefix_cache_hits as f64);
    assert_eq!(delta("generation_tokens"), st.generation_tokens as f64);
    let rate = w["prefix_cache_hit_rate"].as_f64().unwrap();
    assert!((rate - st.prefix_cache_hits as f64 / st.prefix_cache_queries as f64).abs() < 1e-12);
    assert!(rate > 0.3, "the shared prefix is hit: {rate}");
    // Gauges are samples of the engine's state: within its bounds, and the
    // queue built up behind the full cache.
    let kv_max = w["gauges"]["kv_cache_usage_ratio"]["max"].as_f64().unwrap();
    assert!(kv_max > 0.5 && kv_max <= 1.0, "KV peak {kv_max}");
    assert!(w["gauges"]["waiting_requests"]["max"].as_f64().unwrap() >= 1.0);
    assert!(w["gauges"]["running_requests"]["max"].as_f64().unwrap() <= 12.0);
    // The cache's size as the server gives it (vLLM's cache_config_info):
    // 160 blocks of 16, every scrape alike.
    let cache = &w["gauges"]["kv_cache_tokens"];
    assert_eq!((cache["min"].as_f64(), cache["max"].as_f64()), (Some(2560.0), Some(2560.0)), "{cache}");
    // Both sides count the same tokens and requests.
    let cc = &sig["cross_check"];
    assert_eq!(cc["server_generation_tokens"].as_f64().unwrap(), cc["client_output_tokens"].as_f64().unwrap());
    assert_eq!(cc["server_requests_succeeded"].as_f64().unwrap(), 36.0);
    // The same requests on both sides: the TTFT gap is the means' (exact).
    // Each request reaches the server after the client sends it and its
    // first token reaches the client after the server sends it, so the gap
    // is never negative and the server's TTFT is part of the client's. How
    // large the network and client's share is depends on how busy the
    // machine is (CI's two cores, eight tests at a time, once made it half
    // the client's mean), so no bound is put on it.
    assert_eq!(cc["ttft_gap_basis"], "mean", "{cc}");
    let gap = cc["ttft_gap_ms"].as_f64().unwrap();
    let client = cc["client_ttft_mean_ms"].as_f64().unwrap();
    let server_ttft = cc["server_ttft_mean_ms"].as_f64().unwrap();
    assert!(gap >= 0.0 && server_ttft > 0.0, "gap {gap} ms of a client mean {client} ms: {cc}");
    assert!((gap - (client - server_ttft)).abs() < 1e-6, "the gap is the means' difference: {cc}");
    // The engine's queue-time histogram splits the server's TTFT: the small
    // cache keeps requests waiting.
    let queue = cc["server_queue_mean_ms"].as_f64().unwrap();
    assert!(queue > 0.0 && queue <= cc["server_ttft_mean_ms"].as_f64().unwrap(), "{cc}");
    assert!(cc["notes"].to_string().contains("where TTFT went"), "{cc}");
    let kinds: Vec<&str> = v["diagnosis"].as_array().unwrap().iter().filter_map(|d| d["kind"].as_str()).collect();
    assert!(kinds.contains(&"kv_cache_pressure"), "{kinds:?}");
    assert!(kinds.contains(&"prefix_cache"), "{kinds:?}");
    // Which says what the cache holds, against the requests' mean size.
    let kv = v["diagnosis"].as_array().unwrap().iter().find(|d| d["kind"] == "kv_cache_pressure").unwrap();
    let said = kv["message"].as_str().unwrap();
    assert!(said.contains("Its 2560 tokens (the server's own figure) hold about"), "{said}");

    // `report` recomputes the server's side from the scrapes the result
    // keeps: over the same window, exactly what the live run said; over the
    // first half, the counters of that half alone, and no warning that the
    // signals cover the whole run.
    let report = |extra: &[&str], to: &str| -> Value {
        let dest = dir.path().join(to);
        Command::cargo_bin("goodput")
            .unwrap()
            .arg("report")
            .arg(&out)
            .arg("--records")
            .arg(dir.path().join("rec.jsonl"))
            .args(extra)
            .arg("-o")
            .arg(&dest)
            .assert()
            .success();
        serde_json::from_str(&std::fs::read_to_string(&dest).unwrap()).unwrap()
    };
    let again = report(&[], "again.json");
    assert!(sig["samples"].as_array().is_some_and(|s| s.len() >= 3), "the scrapes are kept");
    assert_eq!(again["server_signals"], v["server_signals"]);
    assert_eq!(again["diagnosis"], v["diagnosis"]);
    let end = v["window"]["end_s"].as_f64().unwrap();
    let half = report(&["--window", &format!("0s..{}ms", (end * 500.0) as u64)], "half.json");
    let hw = &half["server_signals"]["window"];
    assert!(hw["window"]["end_s"].as_f64().unwrap() < w["window"]["end_s"].as_f64().unwrap(), "{hw}");
    let half_tokens = hw["counters"]["generation_tokens"]["delta"].as_f64().unwrap();
    assert!(half_tokens > 0.0 && half_tokens < delta("generation_tokens"), "{half_tokens}");
    let warnings = half["warnings"].to_string();
    assert!(!warnings.contains("cover the whole run"), "{warnings}");
}

#[test]
fn prefix_caching_shows_only_where_prompts_share_a_prefix() {
    let (_rt, url, _server) = start(None);
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        Command::cargo_bin("goodput")
            .unwrap()
            .args(["bench", "-q", "--url", &url, "-n", "20", "-c", "4", "--input-tokens", "64", "--output-tokens", "8"])
            .args(["--metrics-interval", "200ms"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        // The client's usage (cached_tokens) and the server's counters tell
        // the same share of prompt tokens served from the cache.
        let cc = &v["server_signals"]["cross_check"];
        let (client, server) = (cc["client_cached_prompt_share"].as_f64(), cc["server_prefix_cache_hit_rate"].as_f64());
        assert!((client.unwrap() - server.unwrap()).abs() < 1e-9, "{cc}");
        let notes = cc["notes"].to_string();
        assert!(notes.contains("prefix cache agrees"), "{notes}");
        v["server_signals"]["window"]["prefix_cache_hit_rate"].as_f64().unwrap()
    };
    let unique = run("unique.json", &[]);
    let shared = run("shared.json", &["--shared-prefix-tokens", "512", "--seed", "7"]);
    // Unique questions share only their chat template's start: one block
    // of 16 of each 99-token prompt (64 words and Llama 3.1's 35 tokens).
    assert!(unique > 0.05 && unique <= 16.0 / 99.0 + 1e-9, "unique prompts hit the template's block: {unique}");
    assert!(shared > 0.5, "a 512-token shared prefix is hit: {shared}");
}

#[test]
fn monitor_once_shows_the_engine_and_fires_alerts() {
    let (rt, url, _server) = start(None);
    // Some load for the monitor to see.
    let load_url = url.clone();
    let load = std::thread::spawn(move || {
        Command::cargo_bin("goodput")
            .unwrap()
            .args([
                "bench",
                "-q",
                "--url",
                &load_url,
                "-n",
                "40",
                "-c",
                "8",
                "--input-tokens",
                "64",
                "--output-tokens",
                "400",
            ])
            .args(["--no-metrics"])
            .output()
            .unwrap()
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("mon.jsonl");
    let out = Command::cargo_bin("goodput")
        .unwrap()
        .args([
            "monitor",
            &url,
            "--interval",
            "500ms",
            "--once",
            "--probe-rate",
            "4",
            // Probes may speak a native API; Ollama's finds its model at /api/tags.
            "--api",
            "ollama-chat",
            "--alert",
            "running>0,kv_cache>0.99",
        ])
        .arg("--record")
        .arg(&rec)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "an alert fired: {text}");
    assert!(text.contains("vllm") && text.contains("run ") && text.contains("ALERT running"), "{text}");
    assert!(!text.contains("ALERT kv_cache"), "{text}");
    let line: Value = serde_json::from_str(std::fs::read_to_string(&rec).unwrap().lines().next().unwrap()).unwrap();
    assert!(line["figures"]["running"].as_f64().unwrap() > 0.0);
    assert_eq!(line["figures"]["probe_errors"].as_f64(), Some(0.0), "{line}");
    assert!(load.join().unwrap().status.success());
    drop(rt);
}

#[test]
fn monitor_keeps_its_duration_while_the_server_is_down_and_refuses_alerts_that_cannot_fire() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let out = Command::cargo_bin("goodput")
        .unwrap()
        .args(["monitor", &url, "--interval", "200ms", "--duration", "1s"])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "it ended, and said no scrape succeeded: {err}");
    assert!(err.contains("scrape failed") && err.contains("no scrape of") && err.contains("succeeded"), "{err}");
    // Probes are a watch, not a load: a rate past one is refused, with bench named.
    let err = crate::cmd::goodput().args(["monitor", "http://127.0.0.1:9", "--once", "--probe-rate", "1e9"]).refusal();
    assert!(err.contains("at most 100 a second") && err.contains("goodput bench --rate"), "{err}");
    // A probe's alert with no probes, and a time without its unit.
    for (alert, says) in [("probe_ttft>1s", "--probe-rate"), ("ttft_p99>200", "ttft_p99>200ms")] {
        let out = Command::cargo_bin("goodput")
            .unwrap()
            .args(["monitor", &url, "--once", "--alert", alert])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains(says) && !err.contains("scrape"), "refused before watching: {err}");
    }
}

#[test]
fn monitor_probes_every_model_it_is_given_and_shows_each() {
    let (_rt, url, _server) = start_serving(None, &["lora-a"]);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("mon.jsonl");
    let out = Command::cargo_bin("goodput")
        .unwrap()
        .args(["monitor", &url, "--interval", "1s", "--once", "--probe-rate", "20", "--model", "Llama-3.1-8B, lora-a"])
        .arg("--record")
        .arg(&rec)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("by model TTFT/TPOT ms: Llama-3.1-8B ") && text.contains(", lora-a "), "{text}");
    let line: Value = serde_json::from_str(std::fs::read_to_string(&rec).unwrap().lines().next().unwrap()).unwrap();
    let by = line["probes_by_model"].as_object().unwrap();
    assert_eq!(by.keys().collect::<Vec<_>>(), ["Llama-3.1-8B", "lora-a"], "{line}");
    assert!(by.values().all(|p| p["ok"].as_u64().unwrap() > 0 && p["failed"] == 0), "{line}");
}

#[test]
fn prometheus_listen_serves_live_client_metrics_under_genai_names() {
    let (_rt, url, _server) = start(None);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("goodput"))
        .args(["bench", "-q", "--url", &url, "-n", "60", "-c", "4", "--input-tokens", "32", "--output-tokens", "300"])
        .args(["--no-metrics", "--prometheus-listen", &addr])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Clients that open connections and hold them (half a request head)
    // take no more than the endpoint's cap of the run's descriptors.
    #[cfg(target_os = "linux")]
    {
        let mut held = Vec::new();
        let start = std::time::Instant::now();
        // (Past the cap, connections wait in the listen queue: fewer than it holds.)
        while held.len() < 100 && start.elapsed().as_secs() < 30 {
            match std::net::TcpStream::connect(&addr) {
                Ok(mut s) => {
                    use std::io::Write;
                    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n");
                    held.push(s);
                }
                // Not listening yet.
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        let fds = std::fs::read_dir(format!("/proc/{}/fd", child.id())).map(|d| d.count()).unwrap_or(0);
        assert!(held.len() == 100 && fds > 0, "{} connections held, {fds} descriptors", held.len());
        assert!(fds < 80, "the run holds {fds} descriptors beside 100 idle scrape connections");
    }
    // Read it mid-run, the way Prometheus would.
    let start = std::time::Instant::now();
    let text = loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if let Ok(mut s) = std::net::TcpStream::connect(&addr) {
            use std::io::{Read, Write};
            let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n");
            let mut body = String::new();
            let _ = s.read_to_string(&mut body);
            if body.contains("outcome=\"success\"") {
                break body;
            }
        }
        assert!(start.elapsed().as_secs() < 30, "no live metrics with a completed request");
    };
    let mut child = child;
    let _ = child.wait();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    let scrape = goodput_core::prometheus::scrape::parse(body);
    assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
    for name in [
        "gen_ai_client_operation_duration_seconds",
        "gen_ai_client_operation_time_to_first_chunk_seconds",
        "gen_ai_client_operation_time_per_output_chunk_seconds",
        "gen_ai_client_token_usage",
    ] {
        assert!(scrape.family(name).is_some(), "{name} missing");
    }
}

/// Runs that warm each other: a run drawn from the same seed as an earlier
/// one sends its prompts again, which the engine's prefix cache serves, and
/// the result says so; a run left to draw its own seed sends new prompts,
/// which it does not.
#[test]
fn a_run_of_an_earlier_runs_prompts_is_served_from_the_cache_and_warned_about() {
    let (_rt, url, _server) = start(None);
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        Command::cargo_bin("goodput")
            .unwrap()
            .args([
                "bench",
                "-q",
                "--url",
                &url,
                "-n",
                "20",
                "-c",
                "4",
                "--input-tokens",
                "256",
                "--output-tokens",
                "4",
            ])
            .args(["--metrics-interval", "200ms", "--include-requests"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        let hits = v["server_signals"]["window"]["prefix_cache_hit_rate"].as_f64().unwrap();
        let prompts: std::collections::BTreeSet<String> =
            v["requests"].as_array().unwrap().iter().map(|r| r["prompt_hash"].as_str().unwrap().to_string()).collect();
        (v, hits, prompts)
    };
    let warned = |v: &Value| v["warnings"].to_string().contains("prefix cache served");
    let (first, first_hits, first_prompts) = run("first.json", &["--seed", "5"]);
    assert!(first_hits < 0.3 && !warned(&first), "new prompts: {first_hits} {}", first["warnings"]);
    let (again, again_hits, again_prompts) = run("again.json", &["--seed", "5"]);
    assert_eq!(again_prompts, first_prompts, "the same seed sends the same prompts");
    assert!(again_hits > 0.9, "the second run is served from the cache: {again_hits}");
    assert!(warned(&again), "{}", again["warnings"]);
    assert!(again["warnings"].to_string().contains("seed is 5"), "{}", again["warnings"]);
    // Drawn afresh: other prompts, a cold cache, and a seed of its own kept in the result.
    let (fresh, fresh_hits, fresh_prompts) = run("fresh.json", &[]);
    assert!(fresh_prompts.is_disjoint(&first_prompts), "a fresh seed sends prompts of its own");
    assert!(fresh_hits < 0.3 && !warned(&fresh), "{fresh_hits} {}", fresh["warnings"]);
    assert_ne!(fresh["config"]["load"]["seed"], first["config"]["load"]["seed"]);
    assert!(fresh["config"]["load"]["seed"].is_u64(), "the drawn seed is recorded");
}

/// A model the server does not serve: every request fails with 404, and
/// the run says which models the server does serve.
#[test]
fn a_wrong_model_name_lists_the_models_served() {
    let (_rt, url, _server) = start_serving(None, &["adapter-a"]);
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--url", &url, "--model", "llama-3-8b", "-n", "2", "--output-tokens", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("hint: the server answered 404 to every request, and serves"), "{err}");
    assert!(err.contains("adapter-a") && err.contains("--model llama-3-8b is not among them"), "{err}");
}

/// The engine speculating 3 tokens a step at acceptance 0.7: its
/// `vllm:spec_decode_*` counters come back as the window's acceptance, by
/// position, equal to the engine's own counts; with usage on every chunk
/// the client sees the bursts, and the cross-check ties the two.
#[test]
fn speculative_decoding_counters_and_the_clients_bursts_agree() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, server) = rt.block_on(async {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100-sxm", "bf16".parse().unwrap()).unwrap();
        cfg.spec = Some(goodput_sim::engine::SpecDecoding { tokens: 3, acceptance: 0.7, draft_cost: 0.05 });
        let server = EngineServer::start(EngineServerConfig { speed: 4.0, ..EngineServerConfig::new(cfg) }).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = goodput_sim::engine_server::app(server.clone());
        tokio::spawn(goodput_sim::server::serve(listener, app, std::future::pending()));
        (url, server)
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--url", &url, "-n", "24", "-c", "6", "--input-tokens", "64", "--output-tokens", "120"])
        .args(["--metrics-interval", "200ms", "--extra-body", r#"{"stream_options":{"continuous_usage_stats":true}}"#])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let st = server.stats();
    let sd = &v["server_signals"]["window"]["spec_decode"];
    assert_eq!(sd["basis"], "counters", "{sd}");
    assert!(st.spec_drafts > 0);
    assert_eq!(sd["drafts"].as_f64(), Some(st.spec_drafts as f64), "{sd}");
    assert_eq!(sd["draft_tokens"].as_f64(), Some(st.spec_draft_tokens as f64), "{sd}");
    let want = st.spec_accepted_tokens as f64 / st.spec_draft_tokens as f64;
    assert!((sd["acceptance_rate"].as_f64().unwrap() - want).abs() < 1e-12, "{sd}");
    let by: Vec<f64> = sd["acceptance_by_position"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(by.len(), 3, "{sd}");
    assert!(by[0] > by[1] && by[1] > by[2], "acceptance falls with the position: {by:?}");
    // The client counted every chunk's tokens from the usage on it, and saw
    // the steps' bursts.
    let tokens = &v["summary"]["tokens"];
    assert_eq!(tokens["chunk_sources"]["continuous_usage"].as_u64(), Some(24), "{tokens}");
    let per_chunk = &tokens["per_chunk"];
    assert!(per_chunk["mean"].as_f64().unwrap() > 1.3 && per_chunk["max"].as_u64().unwrap() >= 4, "{per_chunk}");
    let cc = &v["server_signals"]["cross_check"];
    assert!(cc["notes"].to_string().contains("speculation reaches the client"), "{cc}");
    let kinds: Vec<&str> = v["diagnosis"].as_array().unwrap().iter().filter_map(|d| d["kind"].as_str()).collect();
    assert!(kinds.contains(&"speculative_decoding"), "{kinds:?}");
}

/// `bench`'s embedded engine in data-parallel replicas: the result says so,
/// and each replica's counters come back labelled by its `engine` index,
/// a round-robin router giving each replica the same share.
#[test]
fn the_embedded_engine_runs_data_parallel_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dp.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--sim-dp", "2", "--sim-router", "round-robin", "-n", "20", "-c", "4"])
        .args(["--input-tokens", "32", "--output-tokens", "16", "--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let embedded = &v["config"]["client"]["embedded"];
    assert_eq!((embedded["dp"].as_u64(), embedded["router"].as_str()), (Some(2), Some("round-robin")), "{embedded}");
    let last = v["server_signals"]["samples"].as_array().unwrap().last().unwrap();
    let series = last["signals"]["counters"]["generation_tokens"].as_array().unwrap();
    let of = |engine: &str| {
        series.iter().find(|s| s["series"].as_str().unwrap().contains(&format!("\"engine\": \"{engine}\""))).unwrap()
            ["value"]
            .as_f64()
            .unwrap()
    };
    assert_eq!((of("0"), of("1")), (160.0, 160.0), "ten requests of 16 tokens each: {series:?}");
}

/// `bench`'s embedded engine with the rest of serve's engine flags in
/// `--sim-engine`: speculative decoding, whose acceptance comes back in the
/// server's own counters as vLLM names them, and which the result records;
/// a flag with a `--sim-*` twin, one serve does not take, or a string that
/// does not split is refused naming the problem, and beside --url or the
/// fixed profile it is refused as the other engine flags are.
#[test]
fn the_embedded_engine_takes_serve_s_other_engine_flags() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spec.json");
    let flags = "--spec-tokens 3 --spec-acceptance 0.7";
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--sim-engine", flags, "-n", "20", "-c", "4", "--seed", "1"])
        .args(["--input-tokens", "32", "--output-tokens", "64", "--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["config"]["client"]["embedded"]["engine_flags"], flags, "{}", v["config"]["client"]);
    let sd = &v["server_signals"]["window"]["spec_decode"];
    let drafts = sd["drafts"].as_f64().unwrap_or_else(|| panic!("no drafts counted: {sd}"));
    // 1,280 tokens, up to four a step: hundreds of drafts of three tokens
    // (fewer at a request's end, where fewer are left to draft).
    let draft_tokens = sd["draft_tokens"].as_f64().unwrap();
    assert!(drafts > 300.0 && draft_tokens <= 3.0 * drafts && draft_tokens > 2.5 * drafts, "{sd}");
    // The first drafted token is accepted at 0.7 (hundreds of draws), each
    // later one only after those before it.
    let by_position: Vec<f64> =
        sd["acceptance_by_position"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!(by_position.len(), 3, "{sd}");
    assert!((0.55..0.85).contains(&by_position[0]) && by_position[1] < by_position[0], "{sd}");
    crate::schema::assert_valid(&v, "RunResult", "bench --sim-engine");
    let refused = |args: &[&str]| {
        let o = Command::cargo_bin("goodput").unwrap().args(["bench", "-n", "1"]).args(args).output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let twin = refused(&["--sim-engine", "--pp 2 --tp=2"]);
    assert!(twin.contains("--sim-engine sets --tp, which the embedded engine takes as --sim-tp"), "{twin}");
    let unknown = refused(&["--sim-engine", "--port 8000"]);
    assert!(unknown.contains("unexpected argument '--port'") && unknown.contains("goodput serve --profile engine"));
    assert!(refused(&["--sim-engine", "--pp '2"]).contains("does not split into words"));
    let bad = refused(&["--sim-engine", "--ep 2"]);
    assert!(bad.contains("no experts to spread"), "{bad}");
    let url = refused(&["--url", "http://127.0.0.1:9", "--sim-engine", "--pp 2"]);
    assert!(url.contains("--sim-engine sets up the embedded simulator"), "{url}");
    let fixed = refused(&["--sim-profile", "fixed", "--sim-engine", "--pp 2"]);
    assert!(fixed.contains("--sim-engine describes the embedded engine"), "{fixed}");
}

/// `bench`'s embedded engine balanced by vLLM's own rule (`--sim-internal-lb`
/// with its front ends): the result records it in the router's place, and
/// both replicas serve; without replicas, or the front ends without the
/// rule, it is refused naming bench's own flags.
#[test]
fn the_embedded_engine_takes_vllms_own_balancing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lb.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--sim-dp", "2", "--sim-internal-lb", "--sim-api-server-count", "2", "-n", "20"])
        .args(["-c", "4", "--input-tokens", "32", "--output-tokens", "16", "--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let embedded = &v["config"]["client"]["embedded"];
    assert_eq!(
        (embedded["internal_lb"].as_bool(), embedded["api_server_count"].as_u64(), embedded.get("router")),
        (Some(true), Some(2), None),
        "{embedded}"
    );
    let last = v["server_signals"]["samples"].as_array().unwrap().last().unwrap();
    let series = last["signals"]["counters"]["generation_tokens"].as_array().unwrap();
    let served: Vec<f64> = series.iter().map(|s| s["value"].as_f64().unwrap()).collect();
    assert_eq!((served.len(), served.iter().sum::<f64>()), (2, 320.0), "twenty requests of 16 tokens: {series:?}");
    assert!(served.iter().all(|&t| t > 0.0), "both replicas served: {series:?}");
    let refused = |args: &[&str]| {
        let o = Command::cargo_bin("goodput").unwrap().args(["bench", "-n", "1"]).args(args).output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    assert!(refused(&["--sim-internal-lb"]).contains("add --sim-dp N"));
    assert!(refused(&["--sim-dp", "2", "--sim-api-server-count", "2"]).contains("add --sim-internal-lb"));
    // It describes the embedded engine: not beside --url.
    let url = refused(&["--url", "http://127.0.0.1:9", "--sim-internal-lb"]);
    assert!(url.contains("--sim-internal-lb sets up the embedded simulator"), "{url}");
}

/// A server whose `/metrics` is JSON and whose Prometheus text is at
/// `/prometheus/metrics`, as TensorRT-LLM's trtllm-serve serves them (here
/// the simulated engine's text, moved there): with no --metrics-url, bench
/// finds it there, says so, and the window has the engine's counters.
#[test]
fn bench_finds_prometheus_text_where_trtllm_serve_puts_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, _server) = trtllm_like_front(&rt);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--url", &url, "-n", "8", "-c", "2", "--input-tokens", "32", "--output-tokens", "8"])
        .args(["--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("/metrics serves no Prometheus text; the server's metrics are read at"), "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let window = &v["server_signals"]["window"];
    assert_eq!(window["counters"]["generation_tokens"]["delta"].as_f64(), Some(64.0), "{window}");
    let urls = v["server_signals"]["urls"].to_string();
    assert!(urls.contains("/prometheus/metrics"), "{urls}");
    drop(rt);
}

/// monitor finds the same text there, as bench does, and watches it: its
/// lines show the engine's figures where they had said its metrics held no
/// known signal. A --url that names /metrics is read as given.
#[test]
fn monitor_finds_prometheus_text_where_trtllm_serve_puts_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, _server) = trtllm_like_front(&rt);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("mon.jsonl");
    let rec_arg = rec.to_str().unwrap();
    let (code, out, err) = monitor(&[&url, "--interval", "200ms", "--duration", "700ms", "--record", rec_arg]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains("/metrics serves no Prometheus text; the server's metrics are read at"), "{err}");
    assert!(err.contains("/prometheus/metrics"), "{err}");
    assert!(!out.contains("no known signal") && !err.contains("answered no Prometheus metric"), "{out}{err}");
    let lines: Vec<Value> =
        std::fs::read_to_string(&rec).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(!lines.is_empty(), "{out}{err}");
    // The engine is idle: none running, and the figure is read (not null).
    assert!(lines.iter().all(|l| l["figures"]["running"].as_f64() == Some(0.0)), "{lines:?}");
    // Named as /metrics, it is read as given: the JSON holds no signal.
    let (code, out, err) = monitor(&[&format!("{url}/metrics"), "--interval", "200ms", "--duration", "500ms"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(!err.contains("serves no Prometheus text") && err.contains("answered no Prometheus metric"), "{out}{err}");
    drop(rt);
}

/// The simulated engine behind a front that serves JSON at /metrics and the
/// engine's Prometheus text at /prometheus/metrics, as trtllm-serve does.
fn trtllm_like_front(rt: &tokio::runtime::Runtime) -> (String, Arc<EngineServer>) {
    rt.block_on(async {
        let cfg = EngineConfig::from_names("llama-3.1-8b", "h100-sxm", "bf16".parse().unwrap()).unwrap();
        let server = EngineServer::start(EngineServerConfig { speed: 4.0, ..EngineServerConfig::new(cfg) }).unwrap();
        let app = goodput_sim::engine_server::app(server.clone());
        let engine = server.clone();
        let front = axum::Router::new()
            .route("/metrics", axum::routing::get(|| async { axum::Json(serde_json::json!([{"iter": 1}])) }))
            .route(
                "/prometheus/metrics",
                axum::routing::get(move || {
                    let engine = engine.clone();
                    async move { engine.prometheus() }
                }),
            )
            .fallback_service(app);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(goodput_sim::server::serve(listener, front, std::future::pending()));
        (url, server)
    })
}

/// The engine disaggregated into one prefill and one decode instance on a
/// slow link (1 Gb/s: a 256-token prompt's KV takes 268 ms): a live bench
/// reads vLLM's NIXL histogram as the window's mean KV transfer, equal to
/// the server's own, and the diagnosis says TTFT is mostly that transfer.
#[test]
fn a_disaggregated_engine_s_kv_transfers_reach_the_window_and_the_diagnosis() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, _server) = rt.block_on(async {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100-sxm", "bf16".parse().unwrap()).unwrap();
        cfg.pd = Some(goodput_sim::engine::Disaggregation {
            link_gbps: Some(1.0),
            ..goodput_sim::engine::Disaggregation::parse("1:1").unwrap()
        });
        let server = EngineServer::start(EngineServerConfig { speed: 4.0, ..EngineServerConfig::new(cfg) }).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = goodput_sim::engine_server::app(server.clone());
        tokio::spawn(goodput_sim::server::serve(listener, app, std::future::pending()));
        (url, server)
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--url", &url, "-n", "8", "-c", "1", "--input-tokens", "255", "--output-tokens", "4"])
        .args(["--api", "completions", "--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let kv = v["server_signals"]["window"]["kv_transfer_mean_s"].as_f64().expect("the window's KV transfer");
    // At speed 4, each transfer is 67 ms on the wall clock, one at a time.
    let link = 256.0 * 131_072.0 * 8.0 / 1e9 / 4.0;
    assert!(kv >= link && kv < link + 0.05, "{kv} vs {link}");
    let told: Vec<&str> = v["diagnosis"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["kind"] == "kv_transfer")
        .filter_map(|d| d["message"].as_str())
        .collect();
    assert!(told.iter().any(|m| m.contains("TTFT is mostly KV transfer")), "{:?}", v["diagnosis"]);
}

/// `bench`'s embedded engine disaggregated: the result keeps the pools, and
/// the window has the engine's KV transfers; with --sim-dp it is refused.
#[test]
fn the_embedded_engine_runs_prefill_and_decode_pools() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pd.json");
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--sim-pd", "1:1", "-n", "12", "-c", "3"])
        .args(["--input-tokens", "512", "--output-tokens", "8", "--metrics-interval", "200ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["config"]["client"]["embedded"]["pd"], "1:1", "{}", v["config"]["client"]["embedded"]);
    let kv = v["server_signals"]["window"]["kv_transfer_mean_s"].as_f64().expect("the window's KV transfer");
    assert!(kv > 0.0 && kv < 0.05, "{kv}");
    // Both instances count each prompt, and the prefill instance its one
    // token: the prompts are read from the prefill instance and the output
    // from the decode instance, so the server's counts are the client's
    // (they had been twice the prompt tokens, and a token a request more).
    let counters = &v["server_signals"]["window"]["counters"];
    let tokens = &v["summary"]["tokens"];
    assert_eq!(counters["prompt_tokens"]["delta"].as_f64(), tokens["input"].as_f64(), "{counters} {tokens}");
    assert_eq!(counters["generation_tokens"]["delta"].as_f64(), tokens["output"].as_f64(), "{counters} {tokens}");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--sim-pd", "1:1", "--sim-dp", "2", "-n", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("drop --sim-dp"), "{err}");
}

/// A hostile exporter on 127.0.0.1:0, beside a streamed chat endpoint for
/// probes and runs, ended (its listener closed and its thread joined) when
/// dropped. The first path segment picks the answer: `vllm`, a vLLM
/// exposition whose counter grows by 100 a scrape (of that path); `backwards`, the same
/// with a generation counter that falls by 1000 a scrape; `dcgm`, a DCGM
/// exporter's energy counters (mJ since boot) of GPU 0 at 300 W, of GPU 1
/// at 500 W from its third scrape on, and of GPU 2 at 300 W for its first
/// two, each GPU's 700 W power limit beside; `steady/G/L/...`, a DCGM
/// exporter of G GPUs at a steady 300 W each, L of them with a 700 W power
/// limit ([`steady`]); `huge`, one line more than
/// goodput reads of an endpoint; `wide`, histograms of far too many bounds
/// beside one of an engine's size ([`wide`]); `many`, an engine's metrics
/// beside tens of thousands of other series ([`many`]); `html`, a web page;
/// anything else, 404.
struct Exporter {
    url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Exporter {
    fn start() -> Exporter {
        use std::io::{BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let huge: Arc<String> = Arc::new(
            (0..=goodput_core::prometheus::scrape::MAX_METRIC_LINES).map(|i| format!("a{{b=\"{i}\"}} 1\n")).collect(),
        );
        let scrapes: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>> = Arc::default();
        let started = std::time::Instant::now();
        let thread = std::thread::spawn(move || {
            let mut connections = Vec::new();
            for sock in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(mut sock) = sock else { continue };
                let (huge, scrapes) = (huge.clone(), scrapes.clone());
                connections.push(std::thread::spawn(move || {
                    let request = crate::cmd::read_request(&mut BufReader::new(sock.try_clone().unwrap()));
                    let path = request.split(' ').nth(1).unwrap_or("/").to_string();
                    let n = {
                        let mut seen = scrapes.lock().unwrap();
                        let n = seen.entry(path.clone()).or_default();
                        *n += 1;
                        *n
                    };
                    let vllm = |generated: u64| {
                        format!(
                            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} 3\n\
                             # TYPE vllm:generation_tokens_total counter\n\
                             vllm:generation_tokens_total{{model_name=\"m\"}} {generated}\n"
                        )
                    };
                    let (status, kind, body) = match path.split('/').nth(1).unwrap_or("") {
                        _ if path.ends_with("/chat/completions") => {
                            let chunk = |text: &str| {
                                format!("data: {{\"id\":\"x\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
                            };
                            let usage = "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n";
                            let body = [chunk("a"), chunk("b"), chunk("c"), usage.into(), "data: [DONE]\n\n".into()].concat();
                            ("200 OK", "text/event-stream", body)
                        }
                        "vllm" => ("200 OK", "text/plain; version=0.0.4", vllm(n * 100)),
                        "backwards" => ("200 OK", "text/plain; version=0.0.4", vllm(1_000_000_000 - n * 1000)),
                        "dcgm" => ("200 OK", "text/plain; version=0.0.4", dcgm(n, started.elapsed().as_secs_f64())),
                        "steady" => ("200 OK", "text/plain; version=0.0.4", steady(&path, started.elapsed().as_secs_f64())),
                        "huge" => ("200 OK", "text/plain; version=0.0.4", huge.to_string()),
                        "wide" => ("200 OK", "text/plain; version=0.0.4", wide(n)),
                        "many" => ("200 OK", "text/plain; version=0.0.4", many(n)),
                        "nan" => (
                            "200 OK",
                            "text/plain; version=0.0.4",
                            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} NaN\n\
                             vllm:num_requests_waiting{model_name=\"m\"} +Inf\n"
                                .to_string(),
                        ),
                        "html" => ("200 OK", "text/html", "<html><body>hello</body></html>".to_string()),
                        _ => ("404 Not Found", "text/plain", String::new()),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = sock.write_all(head.as_bytes()).and_then(|_| sock.write_all(body.as_bytes()));
                }));
            }
            for c in connections {
                let _ = c.join();
            }
        });
        Exporter { url, stop, thread: Some(thread) }
    }
}

/// The `dcgm` answer of [`Exporter`] at its `n`th scrape, `t` seconds in.
fn dcgm(n: u64, t: f64) -> String {
    let gpus = [(0, 300.0, true), (1, 500.0, n >= 3), (2, 300.0, n <= 2)];
    let shown = || gpus.iter().filter(|g| g.2);
    let mut body = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n".to_owned();
    for (gpu, watts, _) in shown() {
        body += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {:.0}\n", 5e9 + watts * 1000.0 * t);
    }
    body += "# TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge\n";
    for (gpu, _, _) in shown() {
        body += &format!("DCGM_FI_DEV_POWER_MGMT_LIMIT{{gpu=\"{gpu}\"}} 700\n");
    }
    body
}

/// The `steady/G/L/...` answer of [`Exporter`], `t` seconds in: G GPUs'
/// energy counters (mJ since boot) rising at 300 W each, the first L with
/// their 700 W enforced power limit.
fn steady(path: &str, t: f64) -> String {
    let mut parts = path.split('/').skip(2).map(|n| n.parse::<usize>().unwrap_or(0));
    let (gpus, limits) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    let mut body = "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n".to_owned();
    for gpu in 0..gpus {
        body += &format!("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"{gpu}\"}} {:.0}\n", 5e9 + 300.0 * 1000.0 * t);
    }
    body += "# TYPE DCGM_FI_DEV_ENFORCED_POWER_LIMIT gauge\n";
    for gpu in 0..limits {
        body += &format!("DCGM_FI_DEV_ENFORCED_POWER_LIMIT{{gpu=\"{gpu}\"}} 700\n");
    }
    body
}

/// Finite bounds of [`wide`]'s TTFT series, and its E2E series, each with 20 bounds
/// of its own.
const WIDE_TTFT_BOUNDS: usize = 30_000;
const WIDE_E2E_SERIES: usize = 600;

/// The `wide` answer of [`Exporter`] at its `n`th scrape (43,900 lines,
/// under the 100,000 goodput reads): a TTFT histogram of one series and
/// [`WIDE_TTFT_BOUNDS`] buckets, an E2E one of [`WIDE_E2E_SERIES`] series
/// of 20 bounds each of their own (a probe of 500 such had held a 3 s run's
/// analysis 116 s), and an ITL one of an engine's size (two engines, 20
/// bounds they share), every count rising with `n`.
fn wide(n: u64) -> String {
    let mut t = String::from("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n");
    t += "# TYPE vllm:time_to_first_token_seconds histogram\n";
    for i in 1..=WIDE_TTFT_BOUNDS as u64 {
        t += &format!("vllm:time_to_first_token_seconds_bucket{{le=\"{}\"}} {}\n", i as f64 / 1000.0, n * i);
    }
    let all = n * WIDE_TTFT_BOUNDS as u64;
    t += &format!("vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {all}\n");
    t += &format!("vllm:time_to_first_token_seconds_sum {}\nvllm:time_to_first_token_seconds_count {all}\n", n * 10);
    t += "# TYPE vllm:e2e_request_latency_seconds histogram\n";
    for pod in 0..WIDE_E2E_SERIES as u64 {
        for j in 0..20 {
            let le = (pod * 20 + j) as f64 + 0.5;
            t += &format!("vllm:e2e_request_latency_seconds_bucket{{pod=\"{pod}\",le=\"{le}\"}} {}\n", n * (j + 1));
        }
        t += &format!("vllm:e2e_request_latency_seconds_bucket{{pod=\"{pod}\",le=\"+Inf\"}} {}\n", n * 20);
        t += &format!("vllm:e2e_request_latency_seconds_sum{{pod=\"{pod}\"}} {n}\n");
        t += &format!("vllm:e2e_request_latency_seconds_count{{pod=\"{pod}\"}} {}\n", n * 20);
    }
    t += "# TYPE vllm:inter_token_latency_seconds histogram\n";
    for engine in 0..2 {
        for j in 1..=20 {
            let le = j as f64 / 100.0;
            t += &format!("vllm:inter_token_latency_seconds_bucket{{engine=\"{engine}\",le=\"{le}\"}} {}\n", n * j);
        }
        t += &format!("vllm:inter_token_latency_seconds_bucket{{engine=\"{engine}\",le=\"+Inf\"}} {}\n", n * 20);
        t += &format!("vllm:inter_token_latency_seconds_sum{{engine=\"{engine}\"}} {n}\n");
        t += &format!("vllm:inter_token_latency_seconds_count{{engine=\"{engine}\"}} {}\n", n * 20);
    }
    t
}

/// Gauges of a name no signal reads, and series of the counter of
/// requests succeeded, in [`many`].
const MANY_GAUGES: u64 = 20_000;
const MANY_COUNTER_SERIES: u64 = 12_000;

/// The `many` answer of [`Exporter`] at its `n`th scrape (32,000 lines):
/// an engine's own signals (its running requests, its generated tokens
/// rising by 100 a scrape, an ITL histogram of two engines and 20 bounds),
/// [`MANY_GAUGES`] gauges no signal reads, and [`MANY_COUNTER_SERIES`]
/// series of `vllm:request_success_total`, each rising by one a scrape.
fn many(n: u64) -> String {
    let mut t = String::with_capacity(2_000_000);
    t += "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n";
    t += &format!("# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total {}\n", n * 100);
    t += "# TYPE vllm:inter_token_latency_seconds histogram\n";
    for engine in 0..2 {
        for j in 1..=20 {
            let le = j as f64 / 100.0;
            t += &format!("vllm:inter_token_latency_seconds_bucket{{engine=\"{engine}\",le=\"{le}\"}} {}\n", n * j);
        }
        t += &format!("vllm:inter_token_latency_seconds_bucket{{engine=\"{engine}\",le=\"+Inf\"}} {}\n", n * 20);
        t += &format!("vllm:inter_token_latency_seconds_count{{engine=\"{engine}\"}} {}\n", n * 20);
    }
    t += "# TYPE shard_queue_depth gauge\n";
    for i in 0..MANY_GAUGES {
        t += &format!("shard_queue_depth{{shard=\"{i}\"}} {}\n", (i + n) % 7);
    }
    t += "# TYPE vllm:request_success_total counter\n";
    for pod in 0..MANY_COUNTER_SERIES {
        t += &format!("vllm:request_success_total{{finished_reason=\"stop\",pod=\"{pod}\"}} {n}\n");
    }
    t
}

/// The buckets `signal`'s series hold in each of a result's samples.
fn buckets_per_sample(v: &Value, signal: &str) -> Vec<usize> {
    let samples = v["server_signals"]["samples"].as_array().unwrap();
    let buckets = |s: &Value| s["histogram"]["buckets"].as_array().map_or(0, Vec::len);
    samples
        .iter()
        .map(|sample| sample["signals"]["histograms"][signal].as_array().map_or(0, |all| all.iter().map(buckets).sum()))
        .collect()
}

/// A `/metrics` whose histograms hold far more bounds than an engine's
/// (one series of 30,000 buckets; 600 series of 20 bounds of their own):
/// each is kept without its buckets, its count and mean read, its
/// quantiles not, and a warning names it, its bounds and the cap; the
/// samples hold a bucket a series for them, and an engine-sized histogram
/// beside them is read whole. A probe's 3 s bench against one series of
/// 64,000 buckets had taken 18 s and written 98 MB, and one of 99,000
/// had not ended in 120 s; `report` of the saved run keeps the warnings.
#[test]
fn histograms_of_too_many_bounds_are_kept_coarsened_and_named() {
    let ex = Exporter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "2ms", "--input-tokens", "8"])
        .args(["--output-tokens", "16", "-c", "2", "--duration", "2s", "--metrics-interval", "200ms"])
        .args(["--metrics-url", &format!("{}/wide/metrics", ex.url), "-o"])
        .arg(&out)
        // Far past the run's 2 s and its analysis (it had taken minutes).
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let cap = goodput_core::prometheus::scrape::MAX_HISTOGRAM_BOUNDS;
    let of = |metric: &str, bounds: usize| {
        let named = format!("histogram {metric} had {bounds} distinct bucket bounds (le)");
        warnings.iter().filter(|w| w.contains(&named)).count()
    };
    assert_eq!(of("vllm:time_to_first_token_seconds", WIDE_TTFT_BOUNDS + 1), 1, "{warnings:#?}");
    assert_eq!(of("vllm:e2e_request_latency_seconds", WIDE_E2E_SERIES * 20 + 1), 1, "{warnings:#?}");
    let said_of_cap = format!("more than the {cap} goodput keeps of one histogram");
    assert_eq!(warnings.iter().filter(|w| w.contains(&said_of_cap) && w.contains("not computed")).count(), 2);
    assert!(!v["warnings"].to_string().contains("inter_token_latency"), "{warnings:#?}");

    // A bucket a series (the +Inf one) for the two, 2 × 21 for the engine's.
    let scrapes = v["server_signals"]["scrapes"].as_u64().unwrap() as usize;
    assert!(scrapes >= 3, "{}", v["server_signals"]);
    assert!(
        buckets_per_sample(&v, "ttft_seconds").iter().all(|&b| b == 1),
        "{:?}",
        buckets_per_sample(&v, "ttft_seconds")
    );
    assert!(buckets_per_sample(&v, "e2e_seconds").iter().all(|&b| b == WIDE_E2E_SERIES));
    assert!(buckets_per_sample(&v, "itl_seconds").iter().all(|&b| b == 42));

    let window = &v["server_signals"]["window"]["histograms"];
    let ttft = &window["ttft_seconds"];
    assert!(ttft["count"].as_f64().unwrap() > 0.0 && ttft["mean"].is_f64() && ttft["p50"].is_null(), "{ttft}");
    assert!(window["e2e_seconds"]["p99"].is_null() && window["e2e_seconds"]["mean"].is_f64(), "{window}");
    // ITL's bounds are 0.01 … 0.2 s, its counts even over them: p50 0.1 s.
    let itl = window["itl_seconds"]["p50"].as_f64().unwrap_or_else(|| panic!("{window}"));
    assert!((itl - 0.1).abs() < 1e-9, "{window}");

    let again = dir.path().join("again.json");
    Command::cargo_bin("goodput").unwrap().arg("report").arg(&out).arg("-o").arg(&again).assert().success();
    let w: Value = serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    let kept = w["warnings"].as_array().unwrap().iter().filter_map(Value::as_str);
    assert_eq!(kept.filter(|w| w.contains(&said_of_cap)).count(), 2, "{}", w["warnings"]);
    drop(ex);
}

/// A `/metrics` of an engine's own signals beside tens of thousands of
/// other series: 20,000 gauges no signal reads, which no sample keeps, and
/// 12,000 series of the counter of requests succeeded, more than the
/// values goodput keeps of a scrape, kept summed as one series whose
/// increase is theirs, with one warning that names it, its series and
/// what to do. The engine's own signals are kept as scraped and read
/// whole, and `report` of the saved run keeps the warning and the figures.
/// Each scrape had kept all 12,000 series: a 10 s bench scraping every
/// 100 ms of 99,000 had grown to 790 MB and written a 650 MB result.
#[test]
fn series_past_what_a_scrape_keeps_are_summed_and_named() {
    use goodput_core::prometheus::scrape::{is_folded_series, is_series_cap_warning, MAX_SCRAPE_VALUES};
    // More series of one counter than a scrape keeps values.
    const { assert!(MANY_COUNTER_SERIES as usize > MAX_SCRAPE_VALUES) };
    let ex = Exporter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "2ms", "--input-tokens", "8"])
        .args(["--output-tokens", "16", "-c", "2", "--duration", "2s", "--metrics-interval", "200ms"])
        .args(["--metrics-url", &format!("{}/many/metrics", ex.url), "-o"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let text = std::fs::read_to_string(&out).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let capped: Vec<&&str> = warnings.iter().filter(|w| is_series_cap_warning(w)).collect();
    assert_eq!(capped.len(), 1, "{warnings:#?}");
    let named = format!("requests_succeeded (vllm:request_success_total) had {MANY_COUNTER_SERIES} series");
    assert!(capped[0].contains(&named) && capped[0].contains("--metrics-url"), "{}", capped[0]);
    for engine_s in ["generation_tokens", "itl_seconds", "shard_queue_depth"] {
        assert!(!capped[0].contains(engine_s), "{}", capped[0]);
    }

    let s = &v["server_signals"];
    let samples = s["samples"].as_array().unwrap();
    assert!(samples.len() >= 3 && s["failed_scrapes"] == 0, "{}", s["scrapes"]);
    let count = |a: &Value| a.as_array().map_or(0, Vec::len);
    for sample in samples {
        let sig = &sample["signals"];
        // Kept: one summed series of requests, the engine's own as scraped.
        let requests = &sig["counters"]["requests_succeeded"];
        assert_eq!(count(requests), 1, "{requests}");
        assert!(is_folded_series(requests[0]["series"].as_str().unwrap()), "{requests}");
        let tokens = &sig["counters"]["generation_tokens"];
        assert_eq!(tokens[0]["series"], "vllm:generation_tokens_total", "{tokens}");
        let itl = sig["histograms"]["itl_seconds"].as_array().unwrap();
        assert_eq!(itl.iter().map(|h| count(&h["histogram"]["buckets"])).collect::<Vec<_>>(), [21, 21]);
        assert_eq!(sig["gauges"].as_object().unwrap().keys().collect::<Vec<_>>(), ["running_requests"]);
        let values: usize = sig["counters"].as_object().unwrap().values().map(count).sum::<usize>()
            + itl.iter().map(|h| count(&h["histogram"]["buckets"]) + 1).sum::<usize>();
        assert_eq!(values, 2 + 2 * 22);
    }
    assert!(!text.contains("shard_queue_depth") && !text.contains("\"pod\""), "no series of theirs is kept");

    // The summed series rose by one a series a scrape, as the tokens by 100.
    let window = |v: &Value| {
        let c = &v["server_signals"]["window"]["counters"];
        (c["requests_succeeded"]["delta"].as_f64().unwrap(), c["generation_tokens"]["delta"].as_f64().unwrap())
    };
    let (requests, tokens) = window(&v);
    assert!(tokens >= 200.0, "{}", s["window"]);
    assert_eq!(requests, tokens / 100.0 * MANY_COUNTER_SERIES as f64, "{}", s["window"]);
    let histograms = &s["window"]["histograms"];
    let itl = histograms["itl_seconds"]["p50"].as_f64().unwrap_or_else(|| panic!("{histograms}"));
    assert!((itl - 0.1).abs() < 1e-9, "{histograms}");
    assert_eq!(s["window"]["gauges"]["running_requests"]["max"], 3.0);

    let again = dir.path().join("again.json");
    Command::cargo_bin("goodput").unwrap().arg("report").arg(&out).arg("-o").arg(&again).assert().success();
    let w: Value = serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
    let kept = w["warnings"].as_array().unwrap().iter().filter_map(Value::as_str);
    assert_eq!(kept.filter(|w| is_series_cap_warning(w)).count(), 1, "{}", w["warnings"]);
    assert_eq!(window(&w), (requests, tokens));
    drop(ex);
}

/// `sweep --stages` against the `/metrics` of histograms of too many bounds
/// and of too many series of a counter: every stage's result carries the
/// whole run's warnings of both, once each, as a bench's does (the stages'
/// server signals are drawn from the same scrapes, kept coarsened and
/// summed), where they had carried neither.
#[test]
fn a_sweep_s_stages_carry_the_warnings_of_what_the_scrapes_kept() {
    use goodput_core::prometheus::scrape::{is_histogram_cap_warning, is_series_cap_warning};
    let ex = Exporter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["sweep", "-q", "--stages", "c=1/1s,c=2/1s", "--sim-profile", "fixed", "--sim-ttft", "5ms"])
        .args(["--sim-itl", "2ms", "--input-tokens", "8", "--output-tokens", "16", "--metrics-interval", "200ms"])
        .args(["--metrics-url", &format!("{}/wide/metrics", ex.url)])
        .args(["--metrics-url", &format!("{}/many/metrics", ex.url), "-o"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{said}");
    for p in points {
        let warnings: Vec<&str> =
            p["result"]["warnings"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert_eq!(warnings.iter().filter(|w| is_series_cap_warning(w)).count(), 1, "{warnings:#?}");
        // The wide endpoint's two histograms of too many bounds.
        assert_eq!(warnings.iter().filter(|w| is_histogram_cap_warning(w)).count(), 2, "{warnings:#?}");
        assert!(p["result"]["server_signals"]["samples"].as_array().is_some_and(|s| !s.is_empty()));
    }
    drop(ex);
}

/// `monitor` of the same `/metrics`: each histogram's warning said once,
/// every interval's line written and recorded; and Ctrl-C ends a watch of
/// it, its record holding the lines it printed (a probe of 1,500 series of
/// their own bounds had printed no line in 60 s, said "stopping" on
/// Ctrl-C and gone on, its record empty). How many intervals a run of a
/// given length holds depends on the machine (a debug build on two busy
/// cores had printed none in 2 s): the watch runs until two are recorded,
/// and the run of fixed length is held only to what holds at any speed.
#[test]
fn monitor_of_histograms_of_too_many_bounds_warns_once_and_stops_on_ctrl_c() {
    let ex = Exporter::start();
    let wide = format!("{}/wide/metrics", ex.url);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("mon.jsonl");
    let (code, out, err) =
        monitor(&[&wide, "--interval", "300ms", "--duration", "2s", "--record", rec.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}{err}");
    let warned = |err: &str, histogram: &str| {
        err.matches(&format!("warning: server metrics: histogram {histogram} had")).count()
    };
    let histograms = ["vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"];
    for h in histograms {
        assert!(warned(&err, h) <= 1, "{err}");
    }
    let line = "TTFT p50 - p99 - ms · ITL p50 100 p99";
    assert!(out.lines().all(|l| l.contains(line)), "{out}");
    assert_eq!(std::fs::read_to_string(&rec).map_or(0, |t| t.lines().count()), out.lines().count(), "{out}");

    // Ctrl-C once two intervals are recorded: ended as a stopped watch.
    let watched = dir.path().join("watched.jsonl");
    let mut child = crate::cmd::Kill(
        crate::cmd::goodput_child()
            .args(["monitor", &wide, "--interval", "200ms", "--record", watched.to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let recorded = || std::fs::read_to_string(&watched).map_or(0, |t| t.lines().count());
    let t0 = std::time::Instant::now();
    while recorded() < 2 && t0.elapsed() < std::time::Duration::from_secs(60) {
        assert!(child.0.try_wait().unwrap().is_none(), "the watch goes on");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(recorded() >= 2, "two intervals recorded within 60 s");
    signal(&child.0, libc::SIGINT);
    let status = exits_within(&mut child.0, std::time::Duration::from_secs(30));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "ended by the first Ctrl-C");
    let (mut out, mut err) = (String::new(), String::new());
    std::io::Read::read_to_string(&mut child.0.stdout.take().unwrap(), &mut out).unwrap();
    std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut err).unwrap();
    for h in histograms {
        assert_eq!(warned(&err, h), 1, "{err}");
    }
    let kept = std::fs::read_to_string(&watched).unwrap();
    assert!(kept.lines().count() >= 2, "{kept}");
    assert_eq!(out.lines().count(), kept.lines().count(), "each recorded interval printed: {out}");
    assert!(out.lines().all(|l| l.contains(line)), "{out}");
    for l in kept.lines() {
        let line: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
        assert!(line["window"]["histograms"]["ttft_seconds"]["p50"].is_null(), "{line}");
    }
    drop(ex);
}

/// `bench` of the fixed profile for `secs` s, scraping `urls` every 200 ms,
/// with `more` flags: its exit, its words, and its result.
fn bench_scraping(urls: &[String], secs: &str, more: &[&str]) -> (bool, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let mut cmd = Command::cargo_bin("goodput").unwrap();
    cmd.args(["bench", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "2ms", "--input-tokens", "8"])
        .args(["--output-tokens", "16", "-c", "2", "--duration", secs, "--metrics-interval", "200ms"]);
    for u in urls {
        cmd.args(["--metrics-url", u]);
    }
    let o = cmd.args(more).arg("-o").arg(&out).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let v = std::fs::read_to_string(&out).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or(Value::Null);
    (o.status.success(), said, v)
}

/// Two exporters (two nodes' GPUs, each labelled gpu="0" and gpu="1"): each
/// is read as its own exposition, so their four GPUs' energy adds up. Read
/// as one text, the second's families had been parse errors, dropped: 2
/// GPUs and 600 W reported of 4 and 1200 W, with advice to give `--gpus 2`.
#[test]
fn two_exporters_gpus_all_count() {
    let exporter = Exporter::start();
    let urls = [format!("{}/steady/2/2/a/metrics", exporter.url), format!("{}/steady/2/2/b/metrics", exporter.url)];
    let (ok, said, v) = bench_scraping(&urls, "2s", &["--gpu-hour-usd", "2", "--gpus", "4"]);
    assert!(ok, "{said}");
    let e = &v["energy"];
    assert_eq!(e["gpus"].as_u64(), Some(4), "{e}");
    assert_eq!(e["provisioned_w"].as_f64(), Some(2800.0), "{e}");
    let power = e["mean_power_w"].as_f64().unwrap();
    assert!((power - 1200.0).abs() < 60.0, "{e}");
    assert_eq!(v["server_signals"]["parse_errors"], 0, "{}", v["server_signals"]);
    assert!(!v["warnings"].to_string().contains("--gpus"), "{}", v["warnings"]);
}

/// A shard's wait for `--start-at`: the scrape before it is no baseline, so
/// the wait's energy is not the run's. It had been (a 3 s wait at 600 W
/// counted into a 2 s run: about 1500 W reported of 600 W drawn).
#[test]
fn the_wait_for_start_at_draws_no_energy_in_the_run() {
    let exporter = Exporter::start();
    let urls = [format!("{}/steady/2/2/metrics", exporter.url)];
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
    let at = format!("{:.3}", now + 3.0);
    let (ok, said, v) = bench_scraping(&urls, "2s", &["--start-at", &at]);
    assert!(ok, "{said}");
    let e = &v["energy"];
    let power = e["mean_power_w"].as_f64().unwrap_or_else(|| panic!("{e} {said}"));
    assert!((power - 600.0).abs() < 60.0, "{e}");
    // The baseline was taken as the load started, and stamped so.
    let samples = v["server_signals"]["samples"].as_array().unwrap();
    let first = samples[0]["t_ns"].as_u64().unwrap();
    assert!(first < 1_000_000_000, "{first}");
}

/// One GPU of two exports its power limit: the per-megawatt figure had set
/// its 700 W against both GPUs' draw, twice its value, unwarned.
#[test]
fn a_power_limit_for_one_gpu_of_two_provisions_neither() {
    let exporter = Exporter::start();
    let urls = [format!("{}/steady/2/1/metrics", exporter.url)];
    let (ok, said, v) = bench_scraping(&urls, "2s", &[]);
    assert!(ok, "{said}");
    let e = &v["energy"];
    assert_eq!((e["gpus"].as_u64(), e["provisioned_w"].as_f64()), (Some(2), None), "{e}");
    assert!(e["output_tokens_per_s_per_provisioned_mw"].is_null(), "{e}");
    assert!(v["warnings"].to_string().contains("read for 1 GPU(s) and their energy counters for 2"), "{said}");
}

/// An embeddings run has no output tokens: no J per output token and no
/// tok/s per MW (it had reported 0 tok/s per MW, and with the engine's
/// counters scraped, its one "generation token" a request as J per token).
#[test]
fn an_embeddings_run_has_no_energy_per_output_token() {
    let exporter = Exporter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--api", "embeddings", "-n", "24", "-c", "2", "--input-tokens", "64"])
        .args(["--metrics-interval", "200ms", "--metrics-url", &format!("{}/steady/2/2/metrics", exporter.url)])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let e = &v["energy"];
    assert_eq!(e["output_tokens"], 0, "{e}");
    assert!(e["joules_per_output_token"].is_null() && e["output_tokens_per_s_per_provisioned_mw"].is_null(), "{e}");
    assert_eq!(e["provisioned_w"].as_f64(), Some(1400.0), "{e}");
    assert!(said.contains("energy: no output tokens, so no J per output token"), "{said}");
}

/// A DCGM exporter whose GPUs' energy series come and go during a run: one
/// first seen after the first scrape counts from that sample (its 5 MJ
/// since boot had been taken as drawn in the run, megawatts reported), one
/// missing from the last scrape is said to under-count, the GPUs are
/// counted, and a price for one GPU names `--gpus 3`.
#[test]
fn energy_series_first_seen_late_count_from_their_first_sample() {
    let exporter = Exporter::start();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "2ms", "--input-tokens", "8"])
        .args(["--output-tokens", "16", "-c", "2", "--duration", "2s", "--metrics-interval", "200ms"])
        .args(["--metrics-url", &format!("{}/dcgm/metrics", exporter.url), "--gpu-hour-usd", "2", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let e = &v["energy"];
    assert_eq!((e["source"].as_str(), e["gpus"].as_u64()), (Some("scraped"), Some(3)), "{e}");
    // GPU 0's 300 W throughout, GPU 1's 500 W over most of the window and
    // GPU 2's 300 W over its start: under 1100 W, and no megawatts.
    let power = e["mean_power_w"].as_f64().unwrap();
    assert!(power > 300.0 && power < 1100.0, "{e}");
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("energy: 1 of the 3 GPU energy series first appeared after"), "{warnings}");
    assert!(warnings.contains("energy: 1 of the 3 GPU energy series were missing from"), "{warnings}");
    assert!(warnings.contains("report 3 GPU(s), and the cost is priced for 1") && warnings.contains("--gpus 3"));
    assert_eq!(v["cost"]["gpus"], 1, "the price is as given");
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then ends.
        let _ = std::net::TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `goodput monitor ARGS`, ended within 60 s: its exit code, stdout and stderr.
fn monitor(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::cargo_bin("goodput")
        .unwrap()
        .arg("monitor")
        .args(args)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One endpoint that fails costs only itself: monitor reads the others and
/// names it once (it printed a failure every interval and ended "no scrape
/// succeeded", exit 2); with no metrics at all, the probes are still shown.
/// An exposition past the lines goodput reads is refused saying so (four
/// million lines had aborted on memory); a web page is said to hold no
/// metric goodput knows; a counter that goes down is a reset, not a rate
/// (it was shown as a billion tok/s).
#[test]
fn monitor_reads_the_endpoints_that_answer_and_says_what_the_others_did() {
    let ex = Exporter::start();
    let url = &ex.url;
    let (vllm, missing, huge) =
        (format!("{url}/vllm/metrics"), format!("{url}/missing/metrics"), format!("{url}/huge/metrics"));

    let (code, out, err) = monitor(&[&vllm, "--metrics-url", &missing, "--interval", "300ms", "--duration", "1s"]);
    assert_eq!(code, Some(0), "{out}{err}");
    // 100 tokens a scrape, a scrape every 300 ms: a rate near 333 tok/s.
    assert!(out.lines().count() >= 2, "{out}");
    for l in out.lines() {
        let rate = l.split("vllm · run 3 · gen ").nth(1).and_then(|r| r.strip_suffix(" tok/s"));
        assert!(rate.and_then(|r| r.parse::<f64>().ok()).is_some_and(|r| r > 10.0 && r < 10_000.0), "{l}");
    }
    let said = format!("scrape failed: {missing}: HTTP 404 Not Found; the other endpoints are read");
    assert_eq!(err.matches(&said).count(), 1, "said once, not every interval: {err}");
    assert!(!err.contains("no scrape of"), "{err}");

    let lines = goodput_core::prometheus::scrape::MAX_METRIC_LINES;
    let too_many = format!("{huge}: {} metric lines (samples, # HELP and # TYPE), more than the {lines}", lines + 1);
    let (code, out, err) = monitor(&[&huge, "--metrics-url", &vllm, "--once", "--interval", "200ms"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("vllm · run 3") && err.contains(&too_many) && err.contains("(--metrics-url)"), "{out}{err}");
    let (code, _, err) = monitor(&[&huge, "--once", "--interval", "200ms"]);
    assert_eq!(code, Some(2), "nothing answered: {err}");
    assert!(err.contains(&too_many), "{err}");

    // No metrics (the root's /metrics is 404), and probes: they are shown.
    let (code, out, err) = monitor(&[url, "--probe-rate", "20", "--model", "m", "--once", "--interval", "1s"]);
    assert_eq!(code, Some(0), "the probes answered: {out}{err}");
    assert!(out.contains("no server metrics · probe TTFT ") && out.contains(" ok, 0 failed)"), "{out}");
    assert!(err.contains(&format!("scrape failed: {url}/metrics: HTTP 404 Not Found; the probes go on")), "{err}");

    let (code, out, err) = monitor(&[&format!("{url}/html/metrics"), "--once", "--interval", "200ms"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        err.contains(&format!("note: {url}/html/metrics (text/html) answered no Prometheus metric goodput knows")),
        "{err}"
    );

    let (code, out, err) = monitor(&[&format!("{url}/backwards/metrics"), "--once", "--interval", "200ms"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("vllm · run 3 · gen reset") && !out.contains("tok/s"), "{out}");
    drop(ex);
}

/// A bench whose metrics endpoint is past the lines goodput reads runs on
/// without its signals, the refusal kept as the scrapes' last error (it had
/// aborted on memory and lost the run); beside an endpoint that answers,
/// that one's signals are kept.
#[test]
fn a_bench_scraping_an_endpoint_too_large_keeps_its_run_and_the_others_signals() {
    let ex = Exporter::start();
    let url = &ex.url;
    let dir = tempfile::tempdir().unwrap();
    let bench = |name: &str, metrics: &[&str]| -> Value {
        let out = dir.path().join(name);
        let mut cmd = Command::cargo_bin("goodput").unwrap();
        cmd.args(["bench", "-q", "--url", url, "--model", "m", "-n", "4", "-c", "1", "--metrics-interval", "100ms"]);
        for m in metrics {
            cmd.args(["--metrics-url", m]);
        }
        cmd.arg("-o").arg(&out).timeout(std::time::Duration::from_secs(60)).assert().success();
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
    };
    let (vllm, huge) = (format!("{url}/vllm/metrics"), format!("{url}/huge/metrics"));
    let too_many = format!("{huge}: {} metric lines", goodput_core::prometheus::scrape::MAX_METRIC_LINES + 1);
    let v = bench("alone.json", &[&huge]);
    assert_eq!(v["summary"]["requests"]["completed"], 4, "every request ran");
    let s = &v["server_signals"];
    assert_eq!(s["scrapes"], 0, "{s}");
    assert!(s["failed_scrapes"].as_u64().unwrap() >= 2, "{s}");
    assert!(s["last_error"].as_str().unwrap().contains(&too_many), "{s}");

    let v = bench("beside.json", &[&huge, &vllm]);
    assert_eq!(v["summary"]["requests"]["completed"], 4);
    let s = &v["server_signals"];
    assert!(s["scrapes"].as_u64().unwrap() >= 2 && s["failed_scrapes"] == 0, "{s}");
    assert_eq!(s["engine"], "vllm");
    assert!(s["last_error"].as_str().unwrap().starts_with(&too_many), "{s}");
    drop(ex);
}

/// A server that takes every connection and never answers, holding each
/// until it is dropped.
struct Silent {
    url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Silent {
    fn start() -> Silent {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            for c in listener.incoming() {
                if s.load(std::sync::atomic::Ordering::SeqCst) {
                    return;
                }
                held.extend(c.ok());
            }
        });
        Silent { url, stop, thread: Some(thread) }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        // Wakes the accept loop, which then ends.
        let _ = std::net::TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn signal(child: &std::process::Child, sig: i32) {
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// The child's exit status, if it exits within `limit`.
fn exits_within(child: &mut std::process::Child, limit: std::time::Duration) -> Option<std::process::ExitStatus> {
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    None
}

/// Ctrl-C or SIGTERM while a scrape waits on a server that never answers
/// ends the watch at once (it waited for the scrape's 60 s timeout, and a
/// due tick could start another).
#[test]
fn monitor_stops_on_a_signal_while_a_scrape_waits() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let silent = Silent::start();
        let mut child = crate::cmd::Kill(
            crate::cmd::goodput_child().args(["monitor", &silent.url, "--interval", "60s"]).spawn().unwrap(),
        );
        std::thread::sleep(std::time::Duration::from_millis(1500));
        assert!(child.0.try_wait().unwrap().is_none(), "the scrape waits");
        signal(&child.0, sig);
        let status = exits_within(&mut child.0, std::time::Duration::from_secs(10));
        assert_eq!(status.and_then(|s| s.code()), Some(0), "signal {sig}: ended within 10 s, as a watch stopped");
    }
}

/// Ctrl-C while the model's discovery for the probes waits on a server
/// that never answers (10 s) ends the watch at once, as a stop (it had
/// taken a second signal).
#[test]
fn a_signal_ends_monitor_during_the_model_discovery() {
    let silent = Silent::start();
    let mut child = crate::cmd::Kill(
        crate::cmd::goodput_child()
            .args(["monitor", &silent.url, "--interval", "60s", "--probe-rate", "1"])
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(std::time::Duration::from_millis(1000));
    assert!(child.0.try_wait().unwrap().is_none(), "the discovery waits");
    signal(&child.0, libc::SIGINT);
    let status = exits_within(&mut child.0, std::time::Duration::from_secs(5));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "ended by the first Ctrl-C, well before the discovery's 10 s");
}

/// A `--record` that cannot be written fails, naming the file and the
/// system's error (a full disk had exited 0 with every line lost).
#[cfg(target_os = "linux")]
#[test]
fn monitor_fails_when_its_record_cannot_be_written() {
    let ex = Exporter::start();
    let vllm = format!("{}/vllm/metrics", ex.url);
    let (code, out, err) = monitor(&[&vllm, "--once", "--interval", "200ms", "--record", "/dev/full"]);
    assert_eq!(code, Some(2), "{out}{err}");
    assert!(err.contains("cannot write --record /dev/full") && err.contains("No space left on device"), "{err}");
    drop(ex);
}

/// Probes that fail say why, on the interval's line and in `--record` (a
/// model the server does not serve had shown only "(0 ok, N failed)").
#[test]
fn monitor_says_why_its_probes_failed() {
    let (_rt, url, _server) = start(None);
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("mon.jsonl");
    let rec_arg = rec.to_str().unwrap();
    let (code, out, err) =
        monitor(&[&url, "--interval", "1s", "--once", "--probe-rate", "20", "--model", "nosuch", "--record", rec_arg]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(" ok, ") && out.contains("last probe failure: http_status: ") && out.contains("404"), "{out}");
    let line: Value = serde_json::from_str(std::fs::read_to_string(&rec).unwrap().lines().next().unwrap()).unwrap();
    let why = line["probe_last_failure"].as_str().unwrap_or_default();
    assert!(why.starts_with("http_status: ") && why.contains("404"), "{line}");
}

/// A `--duration` watch in which an alert fired exits 4, as `--once` does
/// (it had exited 0); one in which none fired exits 0.
#[test]
fn a_duration_watch_exits_4_when_an_alert_fired() {
    let ex = Exporter::start();
    let vllm = format!("{}/vllm/metrics", ex.url);
    let (code, out, err) = monitor(&[&vllm, "--interval", "300ms", "--duration", "1s", "--alert", "running>0"]);
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(out.contains("ALERT running"), "{out}");
    let (code, out, err) = monitor(&[&vllm, "--interval", "300ms", "--duration", "1s", "--alert", "running>100"]);
    assert_eq!(code, Some(0), "{out}{err}");
    drop(ex);
}

/// Known series whose every value is NaN or ±Inf are named as such on
/// each interval's line: they had read as "no known signal", as if the
/// server were not vLLM.
#[test]
fn monitor_names_known_series_that_held_no_number() {
    let ex = Exporter::start();
    let nan = format!("{}/nan/metrics", ex.url);
    let (code, out, err) = monitor(&[&nan, "--interval", "200ms", "--duration", "700ms"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let named = "vllm:num_requests_running, vllm:num_requests_waiting read NaN or ±Inf";
    assert!(out.lines().count() >= 1 && out.lines().all(|l| l.contains(named)), "{out}");
    assert!(!out.contains("no known signal in its metrics"), "{out}{err}");
    drop(ex);
}

/// A `/metrics` that counts `aborted` requests as aborted only `lag` after
/// its first scrape (bench's, just before its load starts), and none before:
/// a server that counts the client's cancels a moment after they happen.
struct LateAborts {
    url: String,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LateAborts {
    fn start(aborted: u32, lag: std::time::Duration) -> LateAborts {
        use std::io::{BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", listener.local_addr().unwrap());
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut first: Option<std::time::Instant> = None;
            for sock in listener.incoming() {
                if stopped.load(std::sync::atomic::Ordering::SeqCst) {
                    break;
                }
                let Ok(mut sock) = sock else { continue };
                crate::cmd::read_request(&mut BufReader::new(sock.try_clone().unwrap()));
                let since = first.get_or_insert_with(std::time::Instant::now).elapsed();
                let n = if since >= lag { aborted } else { 0 };
                let body = format!(
                    "# TYPE vllm:request_success_total counter\n\
                     vllm:request_success_total{{finished_reason=\"length\",model_name=\"m\"}} 0\n\
                     vllm:request_success_total{{finished_reason=\"abort\",model_name=\"m\"}} {n}\n"
                );
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\n\
                     connection: close\r\n\r\n",
                    body.len()
                );
                let _ = sock.write_all(head.as_bytes()).and_then(|_| sock.write_all(body.as_bytes()));
            }
        });
        LateAborts { url, stop, thread: Some(thread) }
    }
}

impl Drop for LateAborts {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = std::net::TcpStream::connect(self.url.trim_start_matches("http://").trim_end_matches("/metrics"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The final scrape waits, a moment at most, for the server to count the
/// requests the client cancelled: `bench -c 8 --duration 3s --grace 0s`
/// against goodput serve had said in 2 runs of 3 that the server ended 0 or
/// 1 requests as aborted of the 8 cancelled, and blamed a disconnect the
/// server did not notice, where the server counted all 8 within
/// milliseconds of the scrape taken the instant the run ended.
#[test]
fn the_final_scrape_waits_for_the_server_to_count_the_cancels() {
    // Streams of 0.755 s: two complete in each user's first waves, and the
    // two under way at 2 s (0.49 s in) are cancelled; the server counts
    // them 2.3 s after the first scrape, 0.3 s after the run ends.
    let (_rt, url) = crate::cmd::fixed_server(goodput_sim::fixed::FixedProfile {
        ttft: std::time::Duration::from_millis(5),
        itl: std::time::Duration::from_millis(50),
        tokens_per_chunk: 1,
        ..Default::default()
    });
    let metrics = LateAborts::start(2, std::time::Duration::from_millis(2300));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let started = std::time::Instant::now();
    Command::cargo_bin("goodput")
        .unwrap()
        .args(["bench", "-q", "--url", &url, "--metrics-url", &metrics.url, "-c", "2", "--duration", "2s"])
        .args(["--grace", "0s", "--output-tokens", "15", "-o"])
        .arg(&out)
        .assert()
        .success();
    assert!(started.elapsed() < std::time::Duration::from_secs(60), "the run waited for its streams");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["summary"]["requests"]["cancelled"], 2, "{}", v["summary"]["requests"]);
    let notes = v["server_signals"]["cross_check"]["notes"].to_string();
    assert!(notes.contains("aborts agree: the server ended 2 requests as aborted"), "{notes}");
}

/// A run priced for fewer GPUs than the engines its server's metrics name
/// (vLLM's `engine` label) is told so, with the flag that prices it true;
/// priced for as many, nothing is said (it had priced three data-parallel
/// engines as one GPU without a word).
#[test]
fn a_cost_for_fewer_gpus_than_the_servers_engines_is_told() {
    let (_rt, url, _server) = start_engine(|cfg| cfg.dp = 3, &[]);
    let dir = tempfile::tempdir().unwrap();
    let warnings = |gpus: &[&str]| {
        let out = dir.path().join("run.json");
        Command::cargo_bin("goodput")
            .unwrap()
            .args(["bench", "-q", "--url", &url, "-n", "12", "-c", "6", "--input-tokens", "32", "--output-tokens", "8"])
            .args(["--metrics-interval", "100ms", "--gpu-hour-usd", "2"])
            .args(gpus)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
        v["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let said = warnings(&[]);
    let told = said.iter().find(|w| w.contains("engines")).unwrap_or_else(|| panic!("{said:?}"));
    assert!(told.contains("name 3 engines") && told.contains("counts 1 GPU:") && told.contains("--gpus"), "{told}");
    let said = warnings(&["--gpus", "3"]);
    assert!(!said.iter().any(|w| w.contains("engines")), "{said:?}");
}

/// `sweep --stages` against the engine's `/metrics`: each stage keeps only
/// the scrapes its window reads (from the last at or before its start to
/// the first at or after its end), where each had held and written the
/// whole run's; its server signals are those of the whole run's scrapes
/// over its window (every stage's scrapes together are the whole run's,
/// from the first stage's to the last's, but for those taken between one
/// stage's bracket and the next's: on a busy machine the pause between two
/// stages outlasts a scrape's interval), and `report` of a stage's document
/// draws the same figures again.
#[test]
fn a_sweep_s_stages_keep_only_their_own_scrapes() {
    use goodput_core::prometheus::scrape::{summarize_points, ScrapeSample};
    let (_rt, url, _server) = start(None);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let o = Command::cargo_bin("goodput")
        .unwrap()
        .args(["sweep", "-q", "--stages", "c=1/1s,c=2/1s,c=4/1s,c=2/1s", "--url", &url])
        .args(["--input-tokens", "32", "--output-tokens", "16", "--metrics-interval", "50ms", "-o"])
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 4, "{said}");
    let samples = |p: &Value| -> Vec<ScrapeSample> {
        serde_json::from_value(p["result"]["server_signals"]["samples"].clone()).unwrap()
    };
    // The whole run's scrapes, from the first stage's first to the last's last.
    let mut whole: Vec<ScrapeSample> = points.iter().flat_map(samples).collect();
    whole.sort_by_key(|s| s.t);
    whole.dedup_by_key(|s| s.t);
    let taken = points[0]["result"]["server_signals"]["scrapes"].as_u64().unwrap() as usize;
    // None kept twice nor made up; the stages' brackets are checked one by one below.
    assert!(whole.len() <= taken, "{} of {taken}", whole.len());
    let at = |s: &[ScrapeSample]| s.iter().map(|x| x.t).collect::<Vec<_>>();
    for (i, p) in points.iter().enumerate() {
        let (r, sig) = (&p["result"], &p["result"]["server_signals"]);
        let own = samples(p);
        let w: goodput_core::Window = serde_json::from_value(r["window"].clone()).unwrap();
        assert_eq!(sig["cut"], r["window"], "stage {i}");
        assert_eq!(sig["scrapes"].as_u64(), Some(taken as u64), "the whole run's count, stage {i}");
        assert!(own.len() * 2 < whole.len(), "stage {i}: {} of the run's {}", own.len(), whole.len());
        // Its window's bracket of the whole run's scrapes, and nothing else.
        let (t1, t2) = (goodput_core::clamped_secs(w.start_s), goodput_core::clamped_secs(w.end_s));
        let before = whole.iter().map(|s| s.t).filter(|&t| t <= t1).max().unwrap_or(t1);
        let after = whole.iter().map(|s| s.t).filter(|&t| t >= t2).min().unwrap_or(t2);
        let bracket: Vec<&ScrapeSample> = whole.iter().filter(|s| (before..=after).contains(&s.t)).collect();
        assert_eq!(at(&own), bracket.iter().map(|s| s.t).collect::<Vec<_>>(), "stage {i}");
        let of_whole = summarize_points(whole.iter().map(|s| (s.t, &s.signals)), before, after);
        let saved: goodput_core::prometheus::scrape::WindowSummary =
            serde_json::from_value(sig["window"].clone()).unwrap();
        let json = |x: &goodput_core::prometheus::scrape::WindowSummary| serde_json::to_value(x).unwrap();
        assert!(same_json(&json(&saved), &json(&of_whole)), "stage {i}: {} vs {}", json(&saved), json(&of_whole));
        let tokens = &sig["window"]["counters"]["generation_tokens"]["delta"];
        assert!(tokens.as_f64().is_some_and(|d| d > 0.0), "stage {i}: {tokens}");
        // report draws the same figures from the stage's document.
        let doc = dir.path().join(format!("stage{i}.json"));
        std::fs::write(&doc, serde_json::to_string(r).unwrap()).unwrap();
        let again = dir.path().join(format!("again{i}.json"));
        Command::cargo_bin("goodput").unwrap().arg("report").arg(&doc).arg("-o").arg(&again).assert().success();
        let a: Value = serde_json::from_str(&std::fs::read_to_string(&again).unwrap()).unwrap();
        for field in ["window", "cross_check", "cut"] {
            assert_eq!(a["server_signals"][field], sig[field], "stage {i}: {field}");
        }
        assert_eq!(a["diagnosis"], r["diagnosis"], "stage {i}");
    }
}

/// `a` and `b` alike, their numbers within a part in 10¹²: a document's
/// floats read back may differ from those written in their last digit.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-12 * x.abs().max(y.abs()).max(1.0)
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
