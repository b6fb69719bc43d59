//! A bench against the simulated engine reports the engine's own counters
//! over the window: preemptions, prefix-cache queries and hits (and so the
//! hit rate), with KV use and queue depth sampled from its gauges; a
//! shared-prefix workload shows its hit rate, and the diagnosis names the
//! KV pressure it causes.

use assert_cmd::Command;
use goodput_sim::engine::EngineConfig;
use goodput_sim::engine_server::{EngineServer, EngineServerConfig};
use serde_json::Value;
use std::sync::Arc;

fn start(blocks: Option<u32>) -> (tokio::runtime::Runtime, String, Arc<EngineServer>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (url, server) = rt.block_on(async {
        let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100-sxm", "bf16".parse().unwrap()).unwrap();
        cfg.num_gpu_blocks_override = blocks;
        let server = EngineServer::start(EngineServerConfig { speed: 4.0, ..EngineServerConfig::new(cfg) }).unwrap();
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
    // Both sides count the same tokens and requests.
    let cc = &sig["cross_check"];
    assert_eq!(cc["server_generation_tokens"].as_f64().unwrap(), cc["client_output_tokens"].as_f64().unwrap());
    assert_eq!(cc["server_requests_succeeded"].as_f64().unwrap(), 36.0);
    let kinds: Vec<&str> = v["diagnosis"].as_array().unwrap().iter().filter_map(|d| d["kind"].as_str()).collect();
    assert!(kinds.contains(&"kv_cache_pressure"), "{kinds:?}");
    assert!(kinds.contains(&"prefix_cache"), "{kinds:?}");
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
        v["server_signals"]["window"]["prefix_cache_hit_rate"].as_f64().unwrap()
    };
    let unique = run("unique.json", &[]);
    let shared = run("shared.json", &["--shared-prefix-tokens", "512", "--seed", "7"]);
    assert!(unique < 0.05, "unique prompts barely hit: {unique}");
    assert!(shared > 0.5, "a 512-token shared prefix is hit: {shared}");
}
