//! Embeddings and rerank runs end to end over real HTTP: `bench --api
//! embeddings|rerank` against the embedded engine and against a `goodput
//! serve` process, their documents in the schema, and the options they
//! cannot honour refused with the fix.

use crate::cmd::{goodput, read_json, records, GoodputCommand};
use crate::schema::assert_valid;
use serde_json::Value;

/// `goodput serve` with `args`: its URL, and the guard that stops it.
fn serve(args: &[&str]) -> (String, crate::cmd::Kill) {
    let (url, _, guard) = crate::cmd::serve(args);
    (url, guard)
}

/// The output-side distributions a pooling run has none of: present in the
/// document with no samples.
fn no_output_side(v: &Value) {
    let s = &v["summary"];
    for d in ["ttft_ms", "tpot_ms", "itl_ms", "chunk_gap_ms"] {
        assert_eq!(s[d]["count"], 0, "{d}: {}", s[d]);
        assert!(s[d]["p50"].is_null(), "{d} is absent, not zero: {}", s[d]);
    }
    assert_eq!(s["tokens"]["output"], 0);
    assert!(s["tokens"]["output_sources"].as_object().unwrap().is_empty(), "no output to count: {}", s["tokens"]);
}

#[test]
fn an_embeddings_run_against_the_embedded_engine_is_timed_end_to_end_and_counted_by_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("emb.json"), dir.path().join("emb.jsonl"));
    let o = goodput()
        .args(["bench", "--api", "embeddings", "--embed-batch", "4", "-n", "12", "-c", "3", "--input-tokens", "64"])
        .args(["--slo", "e2e:p99<=30s", "--gpu-hour-usd", "2", "--include-requests"])
        .writing(&out, &rec)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    // The summary shows what the run has: E2E, no empty TTFT or TPOT rows,
    // no output rate, the price of input tokens.
    assert!(said.contains("  E2E ") && !said.contains("  TTFT ") && !said.contains("  TPOT "), "{said}");
    assert!(!said.contains("output tok/s") && said.contains("per M input tokens"), "{said}");
    assert!(said.contains("input 64 tokens · 4 inputs a request"), "{said}");
    let v = read_json(&out);
    assert_valid(&v, "RunResult", "an embeddings run");
    let s = &v["summary"];
    assert_eq!((s["requests"]["completed"].as_u64(), s["requests"]["failed"].as_u64()), (Some(12), Some(0)), "{s}");
    assert_eq!(s["e2e_ms"]["count"], 12);
    assert!(s["e2e_ms"]["p50"].as_f64().unwrap() > 0.0);
    no_output_side(&v);
    assert_eq!(s["tokens"]["input_sources"]["usage"], 12, "input tokens from the server's usage");
    assert!(s["throughput"]["input_tokens_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["cost"]["usd_per_million_input_tokens"].as_f64().unwrap() > 0.0, "{}", v["cost"]);
    assert_eq!(v["slo"]["pass"], true, "{}", v["slo"]);
    let client = &v["config"]["client"];
    assert_eq!((client["api"].as_str(), client["stream"].as_bool()), (Some("embeddings"), Some(false)));
    assert_eq!(client["embed_batch"], 4);
    // The engine ran each input as a sequence of its own, prefilled once:
    // its prompt tokens are the client's, its requests four a request.
    let w = &v["server_signals"]["window"]["counters"];
    assert_eq!(w["prompt_tokens"]["delta"].as_f64(), s["tokens"]["input"].as_f64(), "{w}");
    assert_eq!(w["requests_succeeded"]["delta"].as_f64(), Some(48.0), "{w}");
    // The cross-check sets the prompts against the server's prompt counter
    // (no output to count).
    let notes = v["server_signals"]["cross_check"]["notes"].to_string();
    assert!(notes.contains("prompt tokens agree") && !notes.contains("\"tokens agree"), "{notes}");
    // The HTML report draws E2E and the requests in flight, no empty TTFT or
    // output charts.
    let page = dir.path().join("emb.html");
    goodput().arg("report").arg(&out).arg("--html").arg(&page).assert().success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(r#"id="chart-e2e-cdf""#) && html.contains(r#"id="chart-inflight-time""#));
    assert!(!html.contains(r#"id="chart-ttft-cdf""#) && !html.contains(r#"id="chart-throughput-time""#));
    let card = |k: &str| html.contains(&format!(r#"<div class="k">{k}</div>"#));
    assert!(card("input throughput") && card("E2E p50") && !card("TTFT p50") && !card("output throughput"));
    for r in records(&rec) {
        assert!(r.outcome.is_success() && r.chunks.is_empty(), "{r:?}");
        assert_eq!(r.output_tokens, 0);
        // Four inputs of about 16 words, each after the engine's BOS.
        assert!(r.input_tokens >= 64, "{}", r.input_tokens);
        assert!(r.end > r.sent);
    }
}

#[test]
fn a_rerank_run_against_goodput_serve_fixed_waits_its_ttft_and_counts_the_query_with_each_document() {
    let (url, _server) = serve(&["--profile", "fixed", "--ttft", "20ms"]);
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("rr.json"), dir.path().join("rr.jsonl"));
    goodput()
        .args(["bench", "--url", &url, "--api", "rerank", "--rerank-docs", "5", "-n", "10", "-c", "2", "-q"])
        .args(["--input-tokens", "60", "--no-metrics"])
        .writing(&out, &rec)
        .assert()
        .success();
    let v = read_json(&out);
    assert_valid(&v, "RunResult", "a rerank run");
    assert_eq!(v["summary"]["requests"]["completed"], 10, "{}", v["summary"]["requests"]);
    assert_eq!(v["config"]["client"]["rerank_docs"], 5);
    no_output_side(&v);
    // A causal bound: no answer before the profile's 20 ms.
    assert!(v["summary"]["e2e_ms"]["min"].as_f64().unwrap() >= 20.0, "{}", v["summary"]["e2e_ms"]);
    for r in records(&rec) {
        // 60 words: a query of 10 and five documents of 10, the query read
        // with each of them (one word a token in the fixed profile).
        assert_eq!((r.input_tokens, r.counts.intended_prompt), (100, Some(60)), "{r:?}");
    }
    // TEI's own /rerank on the same server: `texts`, a bare list back and
    // no usage, so the input is the workload's count.
    let tei = dir.path().join("tei.json");
    goodput()
        .args(["bench", "--url", &url, "--api", "tei-rerank", "--rerank-docs", "5", "-n", "6", "-c", "2", "-q"])
        .args(["--input-tokens", "60", "--no-metrics", "-o"])
        .arg(&tei)
        .assert()
        .success();
    let v = read_json(&tei);
    assert_valid(&v, "RunResult", "a TEI rerank run");
    assert_eq!(v["summary"]["requests"]["completed"], 6, "{}", v["summary"]["requests"]);
    assert_eq!(v["summary"]["tokens"]["input_sources"]["intended"], 6, "{}", v["summary"]["tokens"]);
    no_output_side(&v);
}

#[test]
fn goodput_serve_answers_embeddings_in_openai_s_shape_and_counts_them_as_vllm_does() {
    let (url, _server) = serve(&["--profile", "engine", "--speed", "50"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        #[allow(clippy::disallowed_methods)] // A test's own client of the simulator.
        let http = reqwest::Client::new();
        let post = |path: &str, body: Value| {
            let req = http
                .post(format!("{url}{path}"))
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap());
            async move {
                let r = req.send().await.unwrap();
                (r.status().as_u16(), r.text().await.unwrap())
            }
        };
        let body = serde_json::json!({"model": "Llama-3.1-8B", "input": ["one two three", "four five"]});
        let (status, text) = post("/v1/embeddings", body.clone()).await;
        assert_eq!(status, 200, "{text}");
        let a: Value = serde_json::from_str(&text).unwrap();
        let data = a["data"].as_array().unwrap();
        assert_eq!((data.len(), data[1]["index"].as_u64()), (2, Some(1)), "{a}");
        assert!(!data[0]["embedding"].as_array().unwrap().is_empty());
        // Each input after the BOS: 4 + 3 tokens.
        assert_eq!(a["usage"]["prompt_tokens"], 7, "{a}");
        let again: Value = serde_json::from_str(&post("/v1/embeddings", body).await.1).unwrap();
        assert_eq!(again["data"], a["data"], "the same inputs, the same vectors");
        let (status, text) = post("/v1/rerank", serde_json::json!({"documents": ["a"]})).await;
        assert_eq!(status, 400);
        assert!(text.contains("query"), "{text}");
        let text = http.get(format!("{url}/metrics")).send().await.unwrap().text().await.unwrap();
        let value = |name: &str| -> f64 {
            text.lines().filter(|l| l.starts_with(name)).filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum()
        };
        assert_eq!(value("vllm:prompt_tokens_total{"), 14.0, "two requests of 7 tokens:\n{text}");
        assert_eq!(value("vllm:request_success_total{"), 4.0, "two sequences a request:\n{text}");
        // A pooling pass yields a vector, not a token: as vLLM counts it, no
        // generation token, no TTFT, and it stops (it does not reach a length).
        assert_eq!(value("vllm:generation_tokens_total{"), 0.0, "{text}");
        assert_eq!(value("vllm:time_to_first_token_seconds_count{"), 0.0, "{text}");
        assert_eq!(value("vllm:e2e_request_latency_seconds_count{"), 4.0, "{text}");
        let stop = text.lines().filter(|l| l.starts_with("vllm:request_success_total{") && l.contains("\"stop\""));
        assert_eq!(stop.filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok()).sum::<f64>(), 4.0, "{text}");
    });
}

#[test]
fn options_a_pooling_run_cannot_honour_are_refused_with_the_fix() {
    for (args, says) in [
        (&["--api", "embeddings", "--output-tokens", "8"][..], "--output-tokens"),
        (&["--api", "rerank", "--turns", "2"], "--turns"),
        (&["--api", "embeddings", "--ignore-eos"], "--ignore-eos"),
        (&["--api", "embeddings", "--no-usage"], "--no-usage"),
    ] {
        let err = goodput().arg("bench").args(args).args(["-n", "1"]).refusal();
        assert!(err.contains(says) && err.contains("drop") && err.contains("--api chat"), "{err}");
    }
    let err = goodput().args(["bench", "--embed-batch", "2", "-n", "1"]).refusal();
    assert!(err.contains("add --api embeddings"), "{err}");
    let err = goodput().args(["bench", "--api", "embeddings", "--rerank-docs", "2", "-n", "1"]).refusal();
    assert!(err.contains("add --api rerank"), "{err}");
    let err = goodput().args(["estimate", "--api", "embeddings", "-n", "1"]).refusal();
    assert!(err.contains("goodput bench"), "{err}");
    // More pieces than the prompt has words: the words would be repeated,
    // and the server's count blamed for the tokens goodput added.
    let args = ["bench", "--api", "rerank", "--input-tokens", "16", "--rerank-docs", "4096", "-n", "1"];
    let err = goodput().args(args).refusal();
    assert!(err.contains("into 4097 pieces") && err.contains("--input-tokens 4097 or more"), "{err}");
    let err = goodput().args(["bench", "--api", "embeddings", "--embed-batch", "300", "-n", "1"]).refusal();
    assert!(err.contains("--input-tokens 256 gives fewer words"), "the default length: {err}");
}

#[test]
fn a_sweep_of_rerank_points_is_judged_on_input_tokens_and_e2e() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let o = goodput()
        .args(["sweep", "--api", "rerank", "--rerank-docs", "3", "--concurrency", "1,4", "-n", "8"])
        .args(["--input-tokens", "40", "--slo", "e2e:p99<=30s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("in tok/s") && said.contains("E2E p99") && !said.contains("TTFT p50"), "{said}");
    let v = read_json(&out);
    assert_valid(&v, "SweepResult", "a rerank sweep");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        assert_eq!(p["result"]["summary"]["requests"]["completed"], 8, "{}", p["result"]["summary"]["requests"]);
    }
    // The best point is the one with the most input tokens/s, named so.
    let best = v["analysis"]["max_throughput"]["index"].as_u64().unwrap() as usize;
    let rate = |i: usize| points[i]["result"]["summary"]["throughput"]["input_tokens_per_s"].as_f64().unwrap();
    assert!(rate(best) >= rate(1 - best), "{}", v["analysis"]);
    assert!(said.contains("input tok/s, E2E p50"), "{said}");
}
