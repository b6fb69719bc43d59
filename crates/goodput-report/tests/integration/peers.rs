//! Other tools' results read as goodput runs (`goodput_report::read::peers`),
//! on the real files vLLM `bench serve` 0.33.0, AIPerf 0.13.0 and GuideLLM
//! 0.8.1 wrote against the same fixed-timing server (tests/fixtures/peers,
//! its README says how). What goodput recomputes from each file's records
//! must agree with the figures the tool itself saved and printed wherever
//! both define the same thing; where the definitions differ, the difference
//! must be the one the definitions predict.

use goodput_core::{Distribution, RequestMetrics, RequestRecord, RunResult};
use goodput_report::read::{read_document, read_json, Document};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/peers").join(p)
}

fn json(p: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(p)).unwrap()).unwrap()
}

fn printed(p: &str) -> String {
    std::fs::read_to_string(fixture(p)).unwrap()
}

fn import(p: &str) -> RunResult {
    read_json(&fixture(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

#[track_caller]
fn close(ours: f64, theirs: f64, tol: f64, what: &str) {
    assert!((ours - theirs).abs() <= tol, "{what}: goodput {ours} vs the tool's {theirs} (tolerance {tol})");
}

#[track_caller]
fn close_opt(ours: Option<f64>, theirs: f64, tol: f64, what: &str) {
    close(ours.unwrap_or_else(|| panic!("{what}: goodput has no figure")), theirs, tol, what)
}

/// The successful records of an imported run.
fn ok(r: &RunResult) -> Vec<&RequestRecord> {
    r.requests.as_ref().expect("imports keep their records").iter().filter(|r| r.outcome.is_success()).collect()
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// A number printed on a line that starts with `label` (vLLM's summary).
fn printed_value(text: &str, label: &str) -> f64 {
    let line = text.lines().find(|l| l.trim_start().starts_with(label)).unwrap_or_else(|| panic!("no '{label}'"));
    line[label.len()..].split_whitespace().next().unwrap().replace(',', "").parse().unwrap()
}

/// A row of one of AIPerf's printed tables: its cells after the name.
fn aiperf_row(text: &str, table: &str, metric: &str) -> Vec<Option<f64>> {
    let start = text.find(table).unwrap_or_else(|| panic!("no table '{table}'"));
    let line = text[start..]
        .lines()
        .find(|l| l.split('│').nth(1).is_some_and(|c| c.trim() == metric))
        .unwrap_or_else(|| panic!("no row '{metric}' in '{table}'"));
    line.split('│').skip(2).filter(|c| !c.trim().is_empty()).map(|c| c.trim().replace(',', "").parse().ok()).collect()
}

/// GuideLLM's percentile: the first sample whose cumulative weight reaches
/// `p` (numpy's searchsorted on the cumulative sum, its `Percentiles.from_pdf`).
fn inverse_cdf(samples: &[(f64, f64)], p: f64) -> f64 {
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: f64 = s.iter().map(|x| x.1).sum();
    let mut cum = 0.0;
    for (v, w) in &s {
        cum += w / total;
        if cum >= p {
            return *v;
        }
    }
    s.last().unwrap().0
}

// ---------------------------------------------------------------- vLLM

#[test]
fn vllm_is_read_with_what_its_file_names() {
    let r = import("vllm/vllm.json");
    assert_eq!((r.kind.as_str(), r.tool.name.as_str()), ("import", "vllm bench serve"));
    assert_eq!((r.target.model.as_str(), r.target.api.as_str()), ("goodput-fixed", "chat"));
    let load = r.config.load.as_ref().unwrap();
    assert_eq!((load.concurrency, load.requests), (Some(8), Some(40)));
    assert!(r.config.import.as_ref().unwrap().source.ends_with("vllm.json"));
    let settings = r.config.tool_settings.as_ref().unwrap();
    assert_eq!(settings["max_concurrency"], 8);
    assert_eq!(settings["backend"], "openai-chat");
    assert_eq!(r.requests.as_ref().unwrap().len(), 40);
    // What the file cannot give is said, and left out rather than made up.
    assert!(r.warnings.iter().any(|w| w.contains("no vLLM version, no server URL")), "{:?}", r.warnings);
    assert!(r.warnings.iter().any(|w| w.contains("TTFT content and TTFB are not recomputed")));
    assert_eq!((r.summary.ttfb_ms.count, r.summary.ttft_content_ms.count), (0, 0));
    assert_eq!(r.target.url, "");
}

#[test]
fn vllm_figures_recomputed_under_vllms_formulas_are_vllms_own() {
    let r = import("vllm/vllm.json");
    let j = json("vllm/vllm.json");
    let s = &r.summary;
    assert_eq!(s.requests.completed, j["completed"].as_u64().unwrap());
    assert_eq!(s.requests.failed, j["failed"].as_u64().unwrap());
    assert_eq!(s.tokens.input, j["total_input_tokens"].as_u64().unwrap());
    assert_eq!(s.tokens.output, j["total_output_tokens"].as_u64().unwrap());
    // compat.vllm is vLLM's formulas on the rebuilt records: every latency
    // figure vLLM saved, to the nanosecond the records keep.
    let c = serde_json::to_value(&r.compat.vllm).unwrap();
    let mut compared = 0;
    for (k, v) in j.as_object().unwrap() {
        let is_latency = ["ttft", "tpot", "itl", "e2el"].iter().any(|m| k.ends_with(&format!("_{m}_ms")));
        if is_latency && ["mean_", "median_", "std_", "p"].iter().any(|p| k.starts_with(p)) {
            close(c[k].as_f64().unwrap_or(f64::NAN), v.as_f64().unwrap(), 1e-5, k);
            compared += 1;
        }
    }
    assert_eq!(compared, 4 * 7, "mean, median, std and p50/p90/p95/p99 of ttft, tpot, itl, e2el");
}

#[test]
fn vllm_figures_under_goodputs_definitions() {
    let r = import("vllm/vllm.json");
    let j = json("vllm/vllm.json");
    let s = &r.summary;
    let f = |k: &str| j[k].as_f64().unwrap();
    // TTFT and E2E: both tools time the first and the last payload vLLM
    // counted (the file keeps no other), so they agree.
    for (d, name) in [(&s.ttft_ms, "ttft"), (&s.e2e_ms, "e2el")] {
        close_opt(d.mean, f(&format!("mean_{name}_ms")), 1e-5, name);
        for p in [50.0, 90.0, 95.0, 99.0] {
            close_opt(d.p(p), f(&format!("p{p}_{name}_ms")), 1e-5, name);
        }
    }
    // ITL: one token a payload, so goodput's Δ/k is vLLM's raw gap.
    for (d, what) in [(&s.itl_ms, "itl"), (&s.chunk_gap_ms, "chunk gap")] {
        close_opt(d.mean, f("mean_itl_ms"), 1e-5, what);
        close_opt(d.p(99.0), f("p99_itl_ms"), 1e-5, what);
        assert_eq!(d.count, 40 * 32, "{what}");
    }
    // TPOT differs by definition. The fixed server sends an empty
    // `"content": ""` before its first token, which vLLM 0.33 counts as
    // output: 33 payloads for 32 tokens. vLLM divides (latency − ttft) by
    // n − 1; goodput divides the same span by n − k_first, and the file
    // cannot say which payload was empty, so the tokens are spread evenly
    // and the first payload gets 0: goodput's TPOT is vLLM's × (n − 1)/n.
    let (lat, ttft, n) = (j["latencies"].as_array().unwrap(), j["ttfts"].as_array().unwrap(), &j["output_lens"]);
    for (i, rec) in ok(&r).iter().enumerate() {
        let n = n[i].as_f64().unwrap();
        assert_eq!(rec.chunks.len(), 33, "vLLM counted a payload more than the tokens");
        assert_eq!(rec.chunks.at(0).tokens, 0);
        let vllm_tpot = (lat[i].as_f64().unwrap() - ttft[i].as_f64().unwrap()) / (n - 1.0) * 1e3;
        close(ms(rec.tpot().unwrap()), vllm_tpot * (n - 1.0) / n, 1e-5, "tpot");
    }
    close_opt(s.tpot_ms.mean, f("mean_tpot_ms") * 31.0 / 32.0, 1e-5, "mean tpot");
    assert!(
        r.warnings.iter().any(|w| w.contains("on 40 of 40 requests vLLM counted more payloads than output tokens")),
        "{:?}",
        r.warnings
    );
    // Throughput: the same tokens over a shorter window. vLLM's duration
    // runs from before the first send until every task was gathered;
    // goodput's window from the first send to the last payload (the file
    // keeps no stream close).
    let dur = f("duration");
    assert!(r.window.duration_s <= dur && r.window.duration_s > 0.99 * dur, "{} vs {dur}", r.window.duration_s);
    close(s.throughput.output_tokens_per_s * r.window.duration_s, f("output_throughput") * dur, 1e-6, "tokens");
    close(s.throughput.requests_per_s * r.window.duration_s, f("request_throughput") * dur, 1e-9, "requests");
    // In flight from the send times: 8 at once.
    assert_eq!(s.in_flight.peak, 8);
}

#[test]
fn an_older_vllm_file_without_send_times_is_read_over_its_duration() {
    // Versions before start_times: every send at 0, the rates over vLLM's duration.
    let mut v = json("vllm/vllm.json");
    v.as_object_mut().unwrap().remove("start_times");
    v.as_object_mut().unwrap().remove("queue_times");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("old.json");
    std::fs::write(&p, v.to_string()).unwrap();
    let r = read_json(&p).unwrap();
    let dur = v["duration"].as_f64().unwrap();
    assert_eq!(r.window.duration_s, dur);
    close(r.summary.throughput.output_tokens_per_s, v["output_throughput"].as_f64().unwrap(), 1e-9, "tok/s");
    close(r.compat.vllm.request_throughput, v["request_throughput"].as_f64().unwrap(), 1e-9, "req/s");
    assert_eq!((r.summary.in_flight.peak, r.summary.client_queue_ms.count), (0, 0));
    // Latencies are from each request's own send: unchanged.
    assert_eq!(r.summary.ttft_ms, import("vllm/vllm.json").summary.ttft_ms);
    assert!(r.warnings.iter().any(|w| w.contains("saved no send times")), "{:?}", r.warnings);
}

#[test]
fn vllm_figures_agree_with_what_it_printed() {
    let r = import("vllm/vllm.json");
    let t = printed("vllm/terminal.txt");
    let c = &r.compat.vllm;
    assert_eq!(printed_value(&t, "Successful requests:"), r.summary.requests.completed as f64);
    assert_eq!(printed_value(&t, "Total generated tokens:"), r.summary.tokens.output as f64);
    assert_eq!(printed_value(&t, "Total input tokens:"), r.summary.tokens.input as f64);
    let o = |k: &str| c.other_percentiles[k];
    for (label, ours) in [
        ("Mean TTFT (ms):", c.mean_ttft_ms),
        ("Median TTFT (ms):", c.median_ttft_ms),
        ("P90 TTFT (ms):", o("p90_ttft_ms")),
        ("P99 TTFT (ms):", c.p99_ttft_ms),
        ("Mean TPOT (ms):", c.mean_tpot_ms),
        ("P99 TPOT (ms):", c.p99_tpot_ms),
        ("Mean ITL (ms):", c.mean_itl_ms),
        ("P95 ITL (ms):", o("p95_itl_ms")),
        ("P99 ITL (ms):", c.p99_itl_ms),
        ("Mean E2EL (ms):", c.mean_e2el_ms),
        ("Median E2EL (ms):", c.median_e2el_ms),
    ] {
        close_opt(ours, printed_value(&t, label), 0.005 + 1e-9, label);
    }
}

// ---------------------------------------------------------------- AIPerf

#[test]
fn aiperf_is_read_with_its_summary_beside_it() {
    let r = import("aiperf/profile_export.jsonl");
    assert_eq!((r.tool.name.as_str(), r.tool.version.as_str()), ("aiperf", "0.13.0"));
    assert_eq!(r.target.url, "http://127.0.0.1:18779");
    assert_eq!((r.target.model.as_str(), r.target.api.as_str()), ("goodput-fixed", "chat"));
    let load = r.config.load.as_ref().unwrap();
    assert_eq!((load.concurrency, load.requests), (Some(8), Some(40)));
    // The wall clock of its first send.
    let first = json("aiperf/profile_export_aiperf.json");
    assert!(first["start_time"].as_str().unwrap().starts_with("2026-11-25T11:13:27"));
    assert!((r.started_unix_s - 1_795_605_207.6).abs() < 1.0, "{}", r.started_unix_s);
    // Its summary names the records beside it: the same run.
    let via_summary = import("aiperf/profile_export_aiperf.json");
    assert_eq!(via_summary.summary, r.summary);
    assert!(r.summary.tokens.output_sources.get("usage") == Some(&40));
}

#[test]
fn aiperf_figures_agree_with_its_own() {
    let r = import("aiperf/profile_export.jsonl");
    let j = json("aiperf/profile_export_aiperf.json");
    let s = &r.summary;
    let stat = |k: &str, st: &str| j[k][st].as_f64().unwrap_or_else(|| panic!("{k}.{st}"));
    assert_eq!(s.requests.completed as f64, stat("request_count", "avg"));
    assert_eq!(s.tokens.output as f64, stat("total_output_tokens", "avg"));
    assert_eq!(s.tokens.input as f64, stat("total_isl", "avg"));
    // The same definitions on the same stamps: TTFT (first content
    // response), request latency (last content response) = goodput's E2E,
    // inter-chunk latency = goodput's chunk gap and, one token a chunk, its
    // ITL; AIPerf's "inter token latency", (latency − ttft)/(osl − 1) per
    // request, is goodput's TPOT with one token in the first chunk.
    let pairs: [(&Distribution, &str); 5] = [
        (&s.ttft_ms, "time_to_first_token"),
        (&s.e2e_ms, "request_latency"),
        (&s.chunk_gap_ms, "inter_chunk_latency"),
        (&s.itl_ms, "inter_chunk_latency"),
        (&s.tpot_ms, "inter_token_latency"),
    ];
    for (d, k) in pairs {
        assert_eq!(d.count as f64, stat(k, "count"), "{k}");
        close_opt(d.mean, stat(k, "avg"), 1e-6, k);
        close_opt(d.std, stat(k, "std"), 1e-6, k);
        close_opt(d.min, stat(k, "min"), 1e-6, k);
        close_opt(d.max, stat(k, "max"), 1e-6, k);
        for p in [50.0, 90.0, 95.0, 99.0] {
            close_opt(d.p(p), stat(k, &format!("p{p}")), 1e-6, &format!("{k} p{p}"));
        }
    }
    // Its benchmark duration is goodput's window, first send to last
    // content response. Its rates are not over it but over its profiling
    // phase, which starts before the first send: the same tokens over a
    // longer span.
    close(r.window.duration_s, stat("benchmark_duration", "avg"), 1e-6, "duration");
    let phase = aiperf_phase_s();
    assert!(phase > r.window.duration_s, "{phase} vs {}", r.window.duration_s);
    close(stat("output_token_throughput", "avg"), s.tokens.output as f64 / phase, 2e-3, "its output tok/s");
    close(stat("request_throughput", "avg"), s.requests.completed as f64 / phase, 1e-4, "its req/s");
    close(s.throughput.output_tokens_per_s, s.tokens.output as f64 / stat("benchmark_duration", "avg"), 1e-3, "ours");
}

/// The title of AIPerf's main table (the others add ": Effective" and so on).
const LLM_METRICS: &str = "NVIDIA AIPerf | LLM Metrics  ";

/// AIPerf's rates are over its profiling phase, from the phase's start
/// (before the first request was sent) to the last response: its summary's
/// start_time and end_time (to the microsecond).
fn aiperf_phase_s() -> f64 {
    let j = json("aiperf/profile_export_aiperf.json");
    let t = |k: &str| {
        let s = j[k].as_str().unwrap();
        // 2026-11-25T11:13:27.611477: the seconds of the minute are enough here.
        let (hm, sec) = s.rsplit_once(':').unwrap();
        let minute: f64 = hm.rsplit_once(':').unwrap().1.parse().unwrap();
        minute * 60.0 + sec.parse::<f64>().unwrap()
    };
    t("end_time") - t("start_time")
}

#[test]
fn aiperf_figures_agree_with_what_it_printed() {
    let r = import("aiperf/profile_export.jsonl");
    let t = printed("aiperf/terminal.txt");
    let s = &r.summary;
    // Columns: avg, min, max, p99, p90, p50, std.
    let cols = |d: &Distribution| [d.mean, d.min, d.max, d.p(99.0), d.p(90.0), d.p(50.0), d.std];
    for (d, row) in [
        (&s.ttft_ms, "Time to First Token (ms)"),
        (&s.e2e_ms, "Request Latency (ms)"),
        (&s.tpot_ms, "Inter Token Latency (ms)"),
    ] {
        let printed = aiperf_row(&t, LLM_METRICS, row);
        for (ours, theirs) in cols(d).iter().zip(printed) {
            close_opt(*ours, theirs.unwrap(), 0.005 + 1e-9, row);
        }
    }
    let tput = aiperf_row(&t, LLM_METRICS, "Output Token Throughput (tokens/sec)");
    close(s.tokens.output as f64 / aiperf_phase_s(), tput[0].unwrap(), 0.005 + 2e-3, "output tok/s over its phase");
    let n = aiperf_row(&t, LLM_METRICS, "Request Count (requests)");
    assert_eq!(n[0], Some(s.requests.completed as f64));
}

#[test]
fn aiperf_failures_keep_their_status_and_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines: Vec<Value> =
        printed("aiperf/profile_export.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // A request the server refused: AIPerf keeps no content times for it.
    lines[5]["error"] = serde_json::json!({"code": 503, "type": "HTTPError", "message": "Service Unavailable"});
    lines[5]["metrics"] = serde_json::json!({});
    lines[6]["error"] = serde_json::json!({"code": null, "type": "ClientConnectorError", "message": "refused"});
    let p = dir.path().join("profile_export.jsonl");
    std::fs::write(&p, lines.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")).unwrap();
    let r = read_json(&p).unwrap();
    let q = &r.summary.requests;
    assert_eq!((q.completed, q.failed), (38, 2));
    assert_eq!(q.errors_by_kind.get("http_status"), Some(&1));
    assert_eq!(q.errors_by_kind.get("connect"), Some(&1));
    let failed = &r.requests.as_ref().unwrap()[5];
    assert_eq!(failed.http_status, Some(503));
    assert!(
        matches!(&failed.outcome, goodput_core::Outcome::Failed { message, .. } if message == "HTTPError: Service Unavailable")
    );
    // No summary beside these records: what that leaves unknown is said.
    assert_eq!(r.tool.version, "unknown");
    assert!(r.warnings.iter().any(|w| w.contains("no profile_export_aiperf.json beside the records")));
}

// ---------------------------------------------------------------- GuideLLM

#[test]
fn guidellm_is_read_with_what_it_cannot_give_said() {
    let r = import("guidellm/benchmarks.json");
    assert_eq!((r.tool.name.as_str(), r.tool.version.as_str()), ("guidellm", "0.8.1"));
    assert_eq!(r.target.url, "http://127.0.0.1:18779");
    assert_eq!((r.target.model.as_str(), r.target.api.as_str()), ("goodput-fixed", "chat"));
    let load = r.config.load.as_ref().unwrap();
    assert_eq!((load.concurrency, load.requests), (Some(8), Some(40)));
    let s = &r.summary;
    // Only the first and the last iteration are timed: no gaps to pool.
    for d in [&s.itl_ms, &s.chunk_gap_ms, &s.itl_max_ms] {
        assert_eq!((d.count, d.mean, d.p(50.0)), (0, None, None));
    }
    assert_eq!(r.compat.vllm.mean_itl_ms, None);
    assert_eq!(s.throughput.peak_output_tokens_per_s, 0.0);
    assert!(r
        .warnings
        .iter()
        .any(|w| w.contains("ITL, the chunk gaps, the longest gap and the peak output rate are not")));
    assert_eq!(ok(&r).iter().map(|x| x.counts.chunks).collect::<Vec<_>>(), vec![32; 40]);
}

#[test]
fn guidellm_figures_agree_with_its_own() {
    let r = import("guidellm/benchmarks.json");
    let j = json("guidellm/benchmarks.json");
    let b = &j["benchmarks"][0];
    let m = &b["metrics"];
    let s = &r.summary;
    let g = |k: &str, st: &str| m[k]["successful"][st].as_f64().unwrap_or_else(|| panic!("{k}.{st}"));
    let gp = |k: &str, p: &str| m[k]["successful"]["percentiles"][p].as_f64().unwrap();
    let recs = ok(&r);
    assert_eq!(s.requests.completed, m["request_totals"]["successful"].as_u64().unwrap());
    assert_eq!(s.tokens.output as f64, g("output_token_count", "total_sum"));
    assert_eq!(s.tokens.input as f64, g("prompt_token_count", "total_sum"));
    const TOL: f64 = 1e-4; // ms: wall-clock floats of ~1.8e9 s hold about 0.24 µs

    // TTFT: the same definition (first iteration with text − request
    // start). The mean agrees; the percentiles differ by method: GuideLLM
    // takes the first sample whose cumulative share reaches p, goodput
    // interpolates between the two closest ranks (numpy's default).
    close_opt(s.ttft_ms.mean, g("time_to_first_token_ms", "mean"), TOL, "ttft mean");
    close_opt(s.ttft_ms.std, g("time_to_first_token_ms", "std_dev"), TOL, "ttft std");
    let ttft: Vec<(f64, f64)> = recs.iter().map(|x| (ms(x.ttft().unwrap()), 1.0)).collect();
    for (p, key) in [(0.5, "p50"), (0.9, "p90"), (0.95, "p95"), (0.99, "p99")] {
        close(inverse_cdf(&ttft, p), gp("time_to_first_token_ms", key), TOL, &format!("ttft {key}"));
    }

    // GuideLLM's ITL is each request's mean gap, (last − first)/(n − 1),
    // weighted by n − 1: goodput's TPOT with one token in the first
    // iteration. Its mean is Σ(last − first)/Σ(n − 1).
    let tpot: Vec<(f64, f64)> = recs.iter().map(|x| (ms(x.tpot().unwrap()), x.output_tokens as f64 - 1.0)).collect();
    let weighted = tpot.iter().map(|(v, w)| v * w).sum::<f64>() / tpot.iter().map(|x| x.1).sum::<f64>();
    close(weighted, g("inter_token_latency_ms", "mean"), TOL, "itl mean");
    close_opt(s.tpot_ms.mean, g("inter_token_latency_ms", "mean"), TOL, "tpot mean (every n equal)");
    for (p, key) in [(0.5, "p50"), (0.9, "p90"), (0.95, "p95"), (0.99, "p99")] {
        close(inverse_cdf(&tpot, p), gp("inter_token_latency_ms", key), TOL, &format!("itl {key}"));
    }

    // GuideLLM's TPOT counts the first token's wait: (last − start)/n,
    // weighted by n = Σ e2e / Σ n with goodput's E2E.
    let e2e_sum: f64 = recs.iter().map(|x| ms(x.e2e().unwrap())).sum();
    close(e2e_sum / s.tokens.output as f64, g("time_per_output_token_ms", "mean"), TOL, "guidellm tpot");

    // Its request latency runs to the stream's close (after [DONE]),
    // goodput's E2E to the last token: the records' end is its close.
    let latency: Vec<f64> = recs.iter().map(|x| (x.end - x.sent).as_secs_f64()).collect();
    close(latency.iter().sum::<f64>() / 40.0, g("request_latency", "mean"), TOL / 1e3, "latency");
    for x in &recs {
        assert!(x.e2e().unwrap() <= x.end - x.sent);
    }

    // Its output rate is the same tokens over its own measured span, which
    // starts when its scheduler started, before goodput's first send.
    let dur = b["duration"].as_f64().unwrap();
    close(g("output_tokens_per_second", "mean"), s.tokens.output as f64 / dur, 1e-6, "guidellm's rate");
    assert!(r.window.duration_s <= dur + 1e-6 && r.window.duration_s > 0.99 * dur, "{} vs {dur}", r.window.duration_s);
    close(s.throughput.output_tokens_per_s * r.window.duration_s, s.tokens.output as f64, 1e-6, "tokens");
}

#[test]
fn guidellm_figures_agree_with_what_it_printed() {
    let r = import("guidellm/benchmarks.json");
    let t = printed("guidellm/terminal.txt");
    // Request Latency Statistics: latency s (mean, mdn, p95), TTFT, TTFOT,
    // ITL, TPOT ms (mean, mdn, p95 each).
    let start = t.find("Request Latency Statistics").unwrap();
    let row = t[start..].lines().find(|l| l.starts_with("| concurrent@8")).unwrap();
    let cells: Vec<f64> = row
        .split('|')
        .skip(2)
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.split(['±', '*']).next().unwrap().trim().parse().unwrap())
        .collect();
    let s = &r.summary;
    close_opt(s.ttft_ms.mean, cells[3], 0.05 + 1e-9, "TTFT mean");
    close_opt(s.tpot_ms.mean, cells[9], 0.05 + 1e-9, "ITL mean (goodput's TPOT)");
    // Server Throughput Statistics: output tokens per second (its span).
    let start = t.find("Server Throughput Statistics").unwrap();
    let row = t[start..].lines().find(|l| l.starts_with("| concurrent@8")).unwrap();
    let cells: Vec<f64> =
        row.split('|').skip(2).filter(|c| !c.trim().is_empty()).map(|c| c.trim().parse().unwrap()).collect();
    let dur = json("guidellm/benchmarks.json")["benchmarks"][0]["duration"].as_f64().unwrap();
    close(s.tokens.output as f64 / dur, cells[4], 0.05 + 1e-9, "output tok/s");
}

// ---------------------------------------------------------------- all of them

#[test]
fn three_tools_and_goodput_measure_the_same_server() {
    // The server's true TTFT and ITL are 10 ms, 32 tokens a request.
    let goodput = import("goodput/goodput.json");
    for (p, ttft_p50_max) in [
        ("goodput/goodput.json", 12.0),
        ("aiperf/profile_export.jsonl", 12.0),
        ("guidellm/benchmarks.json", 12.0),
        // vLLM's TTFT is timed on the server's empty keep-alive, before the first token.
        ("vllm/vllm.json", 5.0),
    ] {
        let r = import(p);
        let s = &r.summary;
        assert_eq!((s.requests.completed, s.tokens.output), (40, 1280), "{p}");
        let ttft = s.ttft_ms.p(50.0).unwrap();
        assert!(ttft < ttft_p50_max, "{p}: TTFT p50 {ttft}");
        let e2e = s.e2e_ms.p(50.0).unwrap();
        assert!((315.0..340.0).contains(&e2e), "{p}: E2E p50 {e2e}");
        let tpot = s.tpot_ms.p(50.0).unwrap();
        assert!((9.5..10.5).contains(&tpot), "{p}: TPOT p50 {tpot}");
        let rate = s.throughput.output_tokens_per_s;
        assert!((700.0..850.0).contains(&rate), "{p}: {rate} tok/s");
    }
    assert_eq!(goodput.kind, "bench");
}

#[test]
fn a_report_of_an_import_reads_back_as_it_was_written() {
    let r = import("guidellm/benchmarks.json");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("imported.json");
    goodput_report::write_json(&p, &r).unwrap();
    let back = read_json(&p).unwrap();
    assert_eq!(back, r);
    assert_eq!(goodput_report::read::peers::import_info(&back).unwrap().tool, "guidellm");
}

// ---------------------------------------------------------------- bad input

fn refusal(name: &str, text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    match read_document(&p) {
        Err(e) => e.to_string(),
        Ok(Document::Run(r)) => panic!("{name} was read: {:?}", r.tool),
        Ok(Document::Sweep(_)) => panic!("{name} was read as a sweep"),
        Ok(Document::Frontier(_)) => panic!("{name} was read as a frontier"),
    }
}

#[test]
fn files_that_cannot_be_read_are_said_with_the_fix() {
    // vLLM without --save-detailed: its summary alone.
    let mut v = json("vllm/vllm.json");
    for k in ["ttfts", "itls", "start_times", "latencies", "input_lens", "output_lens", "errors"] {
        v.as_object_mut().unwrap().remove(k);
    }
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("without --save-detailed") && e.contains("--save-result --save-detailed"), "{e}");
    // A damaged vLLM file: a time that is no time, a list of the wrong length.
    let mut v = json("vllm/vllm.json");
    v["ttfts"][3] = Value::from(-1.0);
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("\"ttfts\"[3] is not a time"), "{e}");
    let mut v = json("vllm/vllm.json");
    v["itls"].as_array_mut().unwrap().pop();
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("\"itls\" has 39 entries for 40 requests"), "{e}");
    // A value of the wrong type: where it is, and what was expected.
    let mut v = json("vllm/vllm.json");
    v["itls"][2][5] = Value::from("soon");
    let e = refusal("vllm.json", &v.to_string());
    // Read straight from the text, it says where in the text too.
    assert!(
        e.contains("whose itls[2][5] does not read (invalid type: string \"soon\", expected f64 at line 1 column"),
        "{e}"
    );
    let mut g = json("guidellm/benchmarks.json");
    g["benchmarks"][0]["requests"]["successful"][2]["output_tokens"] = Value::from(-3);
    let e = refusal("benchmarks.json", &g.to_string());
    assert!(
        e.contains("benchmark's requests.successful[2].output_tokens does not read (invalid value: integer `-3`"),
        "{e}"
    );
    // AIPerf's summary with no records beside it.
    let e = refusal("profile_export_aiperf.json", &printed("aiperf/profile_export_aiperf.json"));
    assert!(e.contains("holds no per-request records") && e.contains("profile_export.jsonl"), "{e}");
    // A damaged AIPerf line.
    let mut lines: Vec<String> = printed("aiperf/profile_export.jsonl").lines().map(String::from).collect();
    lines[2] = "{\"metadata\": {}, \"metrics\": {}}".into();
    let e = refusal("profile_export.jsonl", &lines.join("\n"));
    assert!(e.contains("line 3: metadata.request_start_ns is not a time"), "{e}");
    let mut third: Value =
        serde_json::from_str(printed("aiperf/profile_export.jsonl").lines().nth(2).unwrap()).unwrap();
    third["metrics"]["time_to_first_token"]["value"] = Value::from("soon");
    lines[2] = third.to_string();
    let e = refusal("profile_export.jsonl", &lines.join("\n"));
    assert!(e.contains("line 3: metrics.time_to_first_token.value does not read (invalid type: string"), "{e}");
    lines[2] = "{not json".into();
    let e = refusal("profile_export.jsonl", &lines.join("\n"));
    assert!(e.contains("line 3: not JSON"), "{e}");
    // GuideLLM with several benchmarks.
    let mut g = json("guidellm/benchmarks.json");
    let b = g["benchmarks"][0].clone();
    g["benchmarks"].as_array_mut().unwrap().push(b);
    let e = refusal("benchmarks.json", &g.to_string());
    assert!(e.contains("of 2 benchmarks") && e.contains("one rate or stream count"), "{e}");
    // None of them, and not goodput's either.
    let e = refusal("other.json", "{\"hello\": 1}");
    assert!(e.contains("not a goodput result") && e.contains("AIPerf (profile_export.jsonl)"), "{e}");
    let e = refusal("other.jsonl", "{\"a\": 1}\n{\"b\": 2}\n");
    assert!(e.contains("is not JSON") && e.contains("GuideLLM"), "{e}");
}

/// Each fixture, read and saved by goodput, reads back as it was: what an
/// import shows passes the check goodput's own documents get.
#[test]
fn every_import_reads_back_as_it_was_written() {
    for p in ["vllm/vllm.json", "aiperf/profile_export.jsonl", "aiperf/profile_export_aiperf.json"] {
        let r = import(p);
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("imported.json");
        goodput_report::write_json(&saved, &r).unwrap();
        assert_eq!(read_json(&saved).unwrap_or_else(|e| panic!("{p}: {e}")), r, "{p}");
    }
}

/// Files damaged in ways each figure alone does not show: each is refused
/// with its cause, where it had been read (a negative TTFT, a token before
/// its request, a run of 57 years) or had aborted.
#[test]
fn damaged_files_are_refused_with_their_cause() {
    // vLLM: a TTFT below zero, the payload still after the run's first send.
    let mut v = json("vllm/vllm.json");
    let first = v["start_times"][0].as_f64().unwrap();
    v["ttfts"][1] = Value::from(-(v["start_times"][1].as_f64().unwrap() - first));
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("whose \"ttfts\"[1] is not a time ≥ 0"), "{e}");
    // A duration of 1e-300 s with no send times had been 4e301 requests a
    // second; a TTFT of 1e9 s in a run of 1.6 s, a window of 31 years.
    let mut v = json("vllm/vllm.json");
    v.as_object_mut().unwrap().remove("start_times");
    v["duration"] = Value::from(1e-300);
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("whose \"duration\" is 1e-300 s, shorter than its requests took: request"), "{e}");
    let mut v = json("vllm/vllm.json");
    v["ttfts"][7] = Value::from(1e9);
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("shorter than its requests took: request 7's last payload came 1.000e9 s after"), "{e}");
    let mut v = json("vllm/vllm.json");
    v["request_rate"] = Value::from(-3);
    let e = refusal("vllm.json", &v.to_string());
    assert!(e.contains("whose \"request_rate\" is -3, not requests per second above 0 or \"inf\""), "{e}");
    // Counts each a u64, and 9e18 output tokens a second: refused as
    // goodput's own saved copy of it would be, naming the tool, the
    // request and the field.
    let mut v = json("vllm/vllm.json");
    v["output_lens"] = Value::from(vec![1u64 << 63; 40]);
    let e = refusal("vllm.json", &v.to_string());
    assert!(
        e.contains(
            "vllm.json is a result of vllm bench serve with figures no run can have (requests[0], request 0: its \
             output_tokens 9223372036854775808 is past the 1073741824 tokens any request can hold)"
        ) && e.ends_with("it was edited or damaged; pass the file vllm bench serve wrote, or measure again"),
        "{e}"
    );

    // GuideLLM: 2^64 - 1 iterations had panicked; times against the
    // request's own start, not the run's first.
    fn timings(g: &mut Value, i: usize) -> &mut Value {
        &mut g["benchmarks"][0]["requests"]["successful"][i]["info"]["timings"]
    }
    /// A request's index, an edit of its timings, and what the refusal says.
    type Case = (usize, fn(&mut Value), &'static str);
    let cases: [Case; 4] = [
        (
            3,
            |t| t["token_iterations"] = Value::from(u64::MAX),
            "whose request successful[3]'s token_iterations is 18446744073709551615, more than its 32",
        ),
        (
            20,
            |t| t["first_token_iteration"] = Value::from(t["request_start"].as_f64().unwrap() - 0.25),
            "whose request successful[20]'s first_token_iteration is 0.250 s before its request_start",
        ),
        (
            4,
            |t| t["last_token_iteration"] = Value::from(t["first_token_iteration"].as_f64().unwrap() - 0.001),
            "request successful[4]'s last_token_iteration is 0.001 s before its first_token_iteration",
        ),
        (
            0,
            |t| t["request_start"] = Value::from(1e300),
            "whose request successful[0]'s request_start is 1.000e300 s after the send before it",
        ),
    ];
    for (i, edit, says) in cases {
        let mut g = json("guidellm/benchmarks.json");
        edit(timings(&mut g, i));
        let e = refusal("benchmarks.json", &g.to_string());
        assert!(e.contains(says), "{e}");
    }

    // AIPerf: a send at 0 among the run's had been a window of 57 years, a
    // TTFT of 1e300 ms one of 584, an output of −1e30 tokens 0.
    let lines: Vec<Value> =
        printed("aiperf/profile_export.jsonl").lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let damaged = |f: &dyn Fn(&mut Value)| -> String {
        let mut l = lines.clone();
        f(&mut l[5]);
        refusal("profile_export.jsonl", &l.iter().map(|l| l.to_string() + "\n").collect::<String>())
    };
    let e = damaged(&|l| l["metadata"]["request_start_ns"] = Value::from(0));
    assert!(
        e.contains("line 6: metadata.request_start_ns is 1.796e9 s before the send after it, where the run's"),
        "{e}"
    );
    let e = damaged(&|l| l["metrics"]["time_to_first_token"]["value"] = Value::from(1e300));
    assert!(e.contains("line 6: metrics.time_to_first_token is 1e300 ms, not a time from 0 to 100 years"), "{e}");
    let e = damaged(&|l| l["metrics"]["output_sequence_length"]["value"] = Value::from(-1e30));
    assert!(e.contains("line 6: metrics.output_sequence_length is -1e30, not a count ≥ 0"), "{e}");
}

/// A byte-order mark is read past; a compressed file and JSON nested past
/// the parser's depth are named as such (they had been "not JSON", "not
/// UTF-8 text" and "not a goodput result").
#[test]
fn a_bom_a_compressed_file_and_deep_nesting_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("vllm.json");
    std::fs::write(&p, format!("\u{feff}{}", printed("vllm/vllm.json"))).unwrap();
    let r = read_json(&p).unwrap();
    assert_eq!(r.summary, import("vllm/vllm.json").summary);
    let records = dir.path().join("profile_export.jsonl");
    std::fs::write(&records, format!("\u{feff}{}", printed("aiperf/profile_export.jsonl"))).unwrap();
    assert_eq!(read_json(&records).unwrap().summary, import("aiperf/profile_export.jsonl").summary);
    // gzip's magic bytes, whatever the name.
    std::fs::write(&p, b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03binary").unwrap();
    let e = read_document(&p).unwrap_err().to_string();
    assert!(
        e.ends_with(&format!(
            "vllm.json is gzip-compressed, and goodput reads the result as plain text: decompress it first (e.g. \
             gzip -dc {} > result.json), and give goodput the plain file",
            p.display()
        )),
        "{e}"
    );
    let deep = format!(
        "{{\"backend\": \"x\", \"duration\": 1, \"completed\": 1, \"ttfts\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let e = refusal("vllm.json", &deep);
    assert!(
        e.contains("vllm.json nests its JSON deeper than goodput reads (recursion limit exceeded at line 1 column")
            && e.ends_with(
                "no result of goodput, vLLM bench serve, AIPerf or GuideLLM nests so deep; is it the right file?"
            ),
        "{e}"
    );
}

/// A window past the horizon of any run's clock (100 years) is no run's,
/// in goodput's own document as in an import.
#[test]
fn a_window_past_a_hundred_years_is_refused() {
    let mut r = import("vllm/vllm.json");
    r.window.end_s = 4e9;
    r.window.duration_s = 4e9;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.json");
    goodput_report::write_json(&p, &r).unwrap();
    let e = read_document(&p).unwrap_err().to_string();
    assert!(e.contains("holds figures no run can have (a window of 4000000000 s): it was edited or damaged"), "{e}");
}
