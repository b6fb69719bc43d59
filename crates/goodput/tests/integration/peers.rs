//! `goodput compare` and `goodput report` on other tools' results: the real
//! files vLLM `bench serve`, AIPerf and GuideLLM wrote against one server
//! (crates/goodput-report/tests/fixtures/peers, whose README says how).

// Only some of the shared helpers are needed here.
#[allow(dead_code)]
use crate::cmd;

use cmd::{goodput, read_json, GoodputCommand};
use std::path::{Path, PathBuf};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../goodput-report/tests/fixtures/peers").join(p)
}

#[test]
fn compare_sets_three_tools_runs_beside_goodputs() {
    let out = goodput()
        .arg("compare")
        .arg(fixture("vllm/vllm.json"))
        .arg(fixture("aiperf/profile_export.jsonl"))
        .arg(fixture("goodput/goodput.json"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    for name in ["vllm.json", "profile_export.jsonl", "goodput.json"] {
        assert!(text.contains(name), "{name} is not named:\n{text}");
    }
    assert!(
        text.contains("vllm.json by vllm bench serve (version unknown), profile_export.jsonl by aiperf 0.13.0, goodput.json by goodput"),
        "{text}"
    );
    // Every run's TTFT under one definition, side by side.
    let ttft = text.lines().find(|l| l.starts_with("TTFT p50")).unwrap();
    assert_eq!(ttft.split_whitespace().filter(|w| w.parse::<f64>().is_ok()).count(), 3, "{ttft}");
}

#[test]
fn compare_takes_guidellm_and_leaves_out_what_it_cannot_give() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("c.md");
    let out = goodput()
        .arg("compare")
        .arg(fixture("goodput/goodput.json"))
        .arg(fixture("guidellm/benchmarks.json"))
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let itl = text.lines().find(|l| l.starts_with("ITL p50")).unwrap();
    assert!(itl.trim_end().ends_with('-'), "GuideLLM keeps no per-chunk times: {itl}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("benchmarks.json"));
}

#[test]
fn report_renders_an_imported_run_as_html() {
    let dir = tempfile::tempdir().unwrap();
    for (p, tool) in [
        ("vllm/vllm.json", "vllm bench serve"),
        ("aiperf/profile_export.jsonl", "aiperf"),
        ("guidellm/benchmarks.json", "guidellm"),
    ] {
        let html = dir.path().join("out.html");
        let out = goodput().arg("report").arg(fixture(p)).arg("--html").arg(&html).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{p}: {text}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains(&format!("imported from {tool}")), "{p}: {text}");
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("<html") && page.contains(&format!("imported from {tool}")), "{p}");
        assert!(page.contains("not recomputed"), "{p}: the page says what the file cannot give");
        // GuideLLM times no chunk but the first and the last: no ITL to
        // draw, and no tokens to place over the run.
        let per_chunk = !p.starts_with("guidellm");
        assert_eq!(page.contains("Inter-token latency (ITL), CDF"), per_chunk, "{p}");
        assert_eq!(page.contains("Output throughput over the run"), per_chunk, "{p}");
    }
}

#[test]
fn csv_leaves_empty_what_the_file_cannot_give() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("csv");
    goodput().arg("report").arg(fixture("guidellm/benchmarks.json")).arg("--csv").arg(&csv).assert().success();
    let text = std::fs::read_to_string(csv.join("requests.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let first: Vec<&str> = lines.next().unwrap().split(',').collect();
    for c in ["ttfb_ms", "ttft_content_ms", "itl_max_ms"] {
        assert_eq!(first[col(c)], "", "{c}");
    }
    assert!(first[col("ttft_ms")].parse::<f64>().unwrap() > 10.0);
}

#[test]
fn report_re_analyses_an_import_and_still_says_what_it_cannot_give() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g.json");
    goodput()
        .arg("report")
        .arg(fixture("guidellm/benchmarks.json"))
        .args(["--percentiles", "50,99", "--slo", "ttft:p99<=50ms"])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let v = read_json(&out);
    assert_eq!((v["kind"].as_str(), v["tool"]["name"].as_str()), (Some("import"), Some("guidellm")));
    assert_eq!(v["summary"]["itl_ms"]["count"], 0);
    assert!(v["summary"]["itl_ms"]["p99"].is_null());
    assert!(v["summary"]["ttft_ms"]["p99"].as_f64().is_some());
    assert_eq!(v["slo"]["pass"], true);
    let warnings: Vec<&str> = v["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).collect();
    assert!(warnings.iter().any(|w| w.contains("GuideLLM times only the first and the last")), "{warnings:?}");
}

#[test]
fn an_slo_on_what_the_file_cannot_give_is_refused() {
    let err =
        goodput().arg("report").arg(fixture("guidellm/benchmarks.json")).args(["--slo", "itl_max:p99<=50ms"]).refusal();
    assert!(err.contains("--slo judges itl_max, which guidellm's file cannot give"), "{err}");
    let err = goodput().arg("report").arg(fixture("vllm/vllm.json")).args(["--slo", "ttfb<=1s"]).refusal();
    assert!(err.contains("--slo judges ttfb"), "{err}");
}

#[test]
fn a_file_of_no_known_tool_is_refused_with_the_formats_read() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("other.json");
    std::fs::write(&p, "{\"results\": []}").unwrap();
    let err = goodput().arg("report").arg(&p).refusal();
    assert!(err.contains("not a goodput result") && err.contains("vLLM bench serve"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
