//! The warm-cache warning against a real `goodput serve`, whose prefix
//! cache outlives a run: a first run of a workload that shares by design
//! (sessions, a long shared prefix, a trace's prefix blocks) is not warned
//! of, and the same run again with the same --seed, its prompts already
//! cached, is. Each of these had never been warned of.

use crate::cmd::{goodput, read_json, serve};
use serde_json::Value;
use std::path::Path;

/// `bench` of `args` at `url` with --seed 31, the server's metrics
/// scraped: its result.
fn run(dir: &Path, url: &str, name: &str, args: &[&str]) -> Value {
    let out = dir.join(name);
    goodput()
        .args(["bench", "-q", "--seed", "31", "--url", url, "--metrics-interval", "200ms"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .timeout(std::time::Duration::from_secs(120))
        .assert()
        .success();
    read_json(&out)
}

/// Runs `args` twice against one fresh server: the first run is not
/// warned of a warm cache, the second is.
fn cold_then_warm(what: &str, args: &[&str]) {
    let dir = tempfile::tempdir().unwrap();
    let (url, _, _server) = serve(&["--host", "127.0.0.1", "--speed", "10"]);
    let warned = |v: &Value| v["warnings"].to_string().contains("held them before the run");
    let hits = |v: &Value| v["server_signals"]["window"]["prefix_cache_hit_rate"].clone();
    let cold = run(dir.path(), &url, "cold.json", args);
    assert!(!warned(&cold), "{what}, a first run (hit rate {}): {}", hits(&cold), cold["warnings"]);
    let warm = run(dir.path(), &url, "warm.json", args);
    assert!(warned(&warm), "{what}, the same seed again (hit rate {}): {}", hits(&warm), warm["warnings"]);
    assert!(warm["warnings"].to_string().contains("seed is 31"), "{}", warm["warnings"]);
}

#[test]
fn sessions_run_again_on_a_warm_cache_are_warned_of() {
    cold_then_warm(
        "two-turn sessions",
        &["-n", "6", "-c", "3", "--turns", "2", "--input-tokens", "1500", "--output-tokens", "8"],
    );
}

#[test]
fn a_long_shared_prefix_run_again_on_a_warm_cache_is_warned_of() {
    cold_then_warm(
        "a shared prefix of 87% of each prompt",
        &["-n", "6", "-c", "2", "--shared-prefix-tokens", "2048", "--input-tokens", "300", "--output-tokens", "8"],
    );
}

#[test]
fn a_trace_replayed_again_on_a_warm_cache_is_warned_of() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mooncake.jsonl");
    // Mooncake's lines: every request opens with the same two blocks.
    let lines: Vec<String> = (0..8)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": 1100, "output_length": 4, "hash_ids": [1, 2, {}]}}"#,
                i * 100,
                10 + i
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    cold_then_warm("a Mooncake trace", &["--trace", trace.to_str().unwrap()]);
}
