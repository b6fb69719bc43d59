//! `estimate` and `sweep --estimate` where the simulated engine meets what
//! a real one answers: requests past the model's context (answered 400, the
//! run goes on), a GPU count for the cost other than the engine's (refused,
//! from the flag or the config file), a sweep an error ends (its document
//! marked interrupted), and model configs read as their authors meant.

use crate::cmd;
use cmd::{goodput, read_json, GoodputCommand};
use std::path::{Path, PathBuf};

/// A model of 4,096 tokens' context, as Llama 2's.
fn short_context(dir: &Path) -> PathBuf {
    let path = dir.join("config.json");
    std::fs::write(
        &path,
        r#"{"num_hidden_layers":2,"hidden_size":256,"num_attention_heads":4,"intermediate_size":512,
            "vocab_size":32000,"max_position_embeddings":4096}"#,
    )
    .unwrap();
    path
}

#[test]
fn a_tail_draw_past_the_context_fails_alone_and_the_run_is_written() {
    // One draw of --preset code past 4,096 tokens had aborted the run with
    // nothing written (rc 2).
    let dir = tempfile::tempdir().unwrap();
    let model = short_context(dir.path());
    let out = dir.path().join("x.json");
    let o = goodput()
        .args(["estimate", "-q", "--preset", "code", "-n", "1000", "--model"])
        .arg(&model)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("% of the requests --input-tokens lognormal:1024,0.6") && err.contains("smaller sigma"),
        "{err}"
    );
    let doc = read_json(&out);
    let r = &doc["summary"]["requests"];
    let failed = r["failed"].as_u64().unwrap();
    assert!((1..50).contains(&failed) && r["completed"].as_u64().unwrap() + failed == 1000, "{r}");
    assert_eq!(r["errors_by_kind"]["http_status"].as_u64(), Some(failed), "{r}");
    let sample = r["error_samples"]["http_status"].as_str().unwrap();
    assert!(sample.starts_with("HTTP 400 Bad Request:") && sample.contains("context of 4096 tokens"), "{sample}");
    // A typical request past the context is still refused before the run.
    let err = goodput()
        .args(["estimate", "-q", "-n", "5", "--input-tokens", "lognormal:6000,0.5", "--model"])
        .arg(&model)
        .refusal();
    assert!(err.contains("(their median draws)") && err.contains("context of 4096"), "{err}");
}

#[test]
fn a_cost_on_other_gpus_than_the_engine_s_is_refused_from_the_flag_or_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "gpus = 2\nprice = \"h100\"\n[prices]\nh100 = 3.0\n").unwrap();
    let sweep = ["sweep", "--estimate", "-q", "--concurrency", "1", "-n", "4"];
    for args in [&["--dp", "2", "--gpus", "1", "--gpu-hour-usd", "2"][..], &["--gpus", "3", "--gpu-hour-usd", "2"][..]]
    {
        let err = goodput().args(sweep).args(args).refusal();
        assert!(err.contains("contradicts the simulated engine"), "{args:?}: {err}");
    }
    for cmd in [&["estimate", "-q", "-n", "4"][..], &sweep[..]] {
        let err = goodput().args(cmd).arg("--config").arg(&config).refusal();
        assert!(err.contains("gpus = 2 in --config") && err.contains("runs on 1 GPU(s)"), "{cmd:?}: {err}");
        // The engine on the file's count: priced on it.
        let out = dir.path().join("ok.json");
        goodput().args(cmd).args(["--tp", "2", "--config"]).arg(&config).arg("-o").arg(&out).assert().success();
    }
}

#[test]
fn a_sweep_an_error_ends_keeps_its_points_marked_interrupted() {
    // The document had read as a finished sweep that "did not reach saturation".
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.json");
    let err = goodput()
        .args(["sweep", "--estimate", "-q", "--concurrency", "1,1000000", "--duration", "30s"])
        .args(["--input-tokens", "64", "--output-tokens", "64", "-o"])
        .arg(&out)
        .refusal();
    assert!(err.contains("1000000 users"), "{err}");
    let doc = read_json(&out);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["points"].as_array().unwrap().len(), 1);
    let note = doc["analysis"]["notes"][0].as_str().unwrap();
    assert!(note.starts_with("the sweep stopped at its point 2 on an error, after 1 point(s) measured"), "{note}");
}

#[test]
fn model_configs_are_read_as_their_authors_meant() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let d = dir.path().join(name);
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("config.json"), text).unwrap();
        d
    };
    let sizes = r#""num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 512,
        "vocab_size": 1000"#;
    let precision = |model: &Path, extra: &[&str]| {
        let out = dir.path().join("m.json");
        let o = goodput().args(["estimate", "-n", "2", "--model"]).arg(model).args(extra).arg("-o").arg(&out).output();
        let o = o.unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let engine = &read_json(&out)["config"]["engine"];
        (engine["precision"].as_str().unwrap().to_string(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    // A multimodal checkpoint's quantization_config at the top level.
    let mm = write(
        "mm",
        &format!(r#"{{"quantization_config": {{"quant_method": "awq", "bits": 4}}, "text_config": {{{sizes}}}}}"#),
    );
    assert_eq!(precision(&mm, &["-q"]).0, "int4");
    // GPT-OSS's MXFP4 runs as such; a scheme not modelled runs 16-bit, and says so.
    let mx = write("mx", &format!(r#"{{{sizes}, "quantization_config": {{"quant_method": "mxfp4"}}}}"#));
    let (p, err) = precision(&mx, &[]);
    assert_eq!(p, "mxfp4", "{err}");
    assert!(!err.contains("is not modelled"), "{err}");
    let bnb = write("bnb", &format!(r#"{{{sizes}, "quantization_config": {{"quant_method": "bitsandbytes"}}}}"#));
    let (p, err) = precision(&bnb, &[]);
    assert_eq!(p, "bf16");
    assert!(err.contains("quantization_config \"bitsandbytes\" is not modelled: running 16-bit weights"), "{err}");
    // A byte-order mark before the JSON.
    let bom = write("bom", &format!("\u{feff}{{{sizes}}}"));
    assert_eq!(precision(&bom, &["-q"]).0, "bf16");
    // Not a regular file, and a config.json whose links loop.
    let err = goodput().args(["estimate", "-q", "-n", "2", "--model", "/dev/null"]).refusal();
    assert!(err.contains("/dev/null is a character device") && !err.contains("unknown model"), "{err}");
    #[cfg(unix)]
    {
        let d = dir.path().join("loop");
        std::fs::create_dir(&d).unwrap();
        std::os::unix::fs::symlink(d.join("a"), d.join("config.json")).unwrap();
        std::os::unix::fs::symlink(d.join("config.json"), d.join("a")).unwrap();
        let err = goodput().args(["estimate", "-q", "-n", "2", "--model"]).arg(&d).refusal();
        assert!(err.contains("is a symbolic link that leads to no file"), "{err}");
    }
}

/// An estimate under load says beside its figures how far the engine's
/// TTFT was from NIM's held-out closed loops, marking the start its users
/// made (together by default, apart with --ramp-up, neither on a
/// schedule), and how to check it, on standard error and in its saved
/// documents (the JSON's engine block, the Markdown and the HTML); one user
/// at a time, whose TTFT the engine's checks found close, says nothing of
/// it. Every estimate's energy says how far the power model was from a
/// GPU's measured steps. A sweep of predicted points under load says both
/// in its notes.
#[test]
fn an_estimate_under_load_says_how_far_its_ttft_was_and_one_user_alone_does_not() {
    let note = "accuracy: TTFT under load is the engine's least certain figure";
    let dir = tempfile::tempdir().unwrap();
    // Standard error, the JSON's engine notes, the Markdown and the HTML.
    let run = |load: &[&str]| {
        let p = |f: &str| dir.path().join(f);
        let o = goodput()
            .arg("estimate")
            .args(load)
            .args(["-n", "40", "--input-tokens", "256", "--output-tokens", "16", "-o"])
            .arg(p("e.json"))
            .arg("--markdown")
            .arg(p("e.md"))
            .arg("--html")
            .arg(p("e.html"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{err}");
        let json = read_json(&p("e.json"))["engine"]["notes"].clone();
        let read = |f: &str| std::fs::read_to_string(p(f)).unwrap();
        (err, json, read("e.md"), read("e.html"))
    };
    let (together, json, md, html) = run(&["-c", "16"]);
    assert!(
        together.contains(note)
            && together.contains("sent together (as here), ")
            && together.contains("bench or sweep"),
        "{together}"
    );
    assert_eq!(json.as_array().map_or(0, |a| a.len()), 3, "{json}");
    let saved = json[0].as_str().unwrap();
    assert!(together.contains(&format!("note: {saved}")), "{together}");
    // vLLM's scheduler (the default) under load: faster than served runs.
    let served = "accuracy: under load on vLLM's scheduler on Hopper the engine was faster than served runs";
    assert!(json[1].as_str().is_some_and(|n| n.starts_with(served)), "{json}");
    assert!(together.contains(&format!("note: {served}")), "{together}");
    let energy = "energy: the power model was checked against an H200's measured steps";
    assert!(json[2].as_str().is_some_and(|n| n.starts_with(energy)), "{json}");
    assert!(together.contains(&format!("note: {energy}")) && md.contains("- note: energy: the power model"), "{md}");
    assert!(md.contains("- note: accuracy: TTFT under load") && md.contains(r"sent together \(as here\)"), "{md}");
    assert!(html.contains("<p class=\"note\">Note: accuracy: TTFT under load"), "{html}");
    let (apart, json, ..) = run(&["-c", "16", "--ramp-up", "1s"]);
    assert!(apart.contains("started apart (as here) was below every one"), "{apart}");
    assert!(json[0].as_str().is_some_and(|n| n.contains("started apart (as here)")), "{json}");
    // TensorRT-LLM's scheduler, whose offline tables set the constants,
    // quotes its own served runs.
    let (trt, json, ..) = run(&["-c", "16", "--scheduler", "trtllm"]);
    let served_trt =
        "accuracy: under load on TensorRT-LLM's scheduler on Hopper the engine was faster than served runs";
    assert!(trt.contains(note) && !trt.contains("under load on vLLM") && json.as_array().unwrap().len() == 3, "{json}");
    assert!(json[1].as_str().is_some_and(|n| n.starts_with(served_trt)), "{json}");
    let (schedule, ..) = run(&["--rate", "inf", "-c", "16"]);
    assert!(schedule.contains("on a schedule, which is neither") && !schedule.contains("(as here)"), "{schedule}");
    let (alone, json, md, html) = run(&["-c", "1"]);
    assert!(!alone.contains(note) && !alone.contains("under load on"), "{alone}");
    assert!(!md.contains(note) && !html.contains("accuracy: TTFT"), "{md}");
    assert!(json.as_array().is_some_and(|a| a.len() == 1 && a[0].as_str().unwrap().starts_with(energy)), "{json}");
    // An uncalibrated family is said in the same places, under load or not.
    let (amd, json, md, _) = run(&["-c", "1", "--gpu", "mi355x"]);
    let uncalibrated = "MI355X (cdna4) is uncalibrated: it runs on CDNA3's constants";
    assert!(amd.contains(&format!("note: {uncalibrated}")), "{amd}");
    assert!(
        json[0].as_str().is_some_and(|n| n.starts_with(uncalibrated)) && json.as_array().unwrap().len() == 2,
        "{json}"
    );
    assert!(md.contains("- note: MI355X \\(cdna4\\) is uncalibrated"), "{md}");
    // A calibrated family whose check leaves its prefill out says so there.
    let (cdna3, json, ..) = run(&["-c", "1", "--gpu", "mi300x"]);
    let fitted = "MI300X (cdna3) runs on constants fitted on AMD's offline vLLM runs of eight MI300X";
    assert!(cdna3.contains(&format!("note: {fitted}")) && !cdna3.contains("uncalibrated"), "{cdna3}");
    assert!(json[0].as_str().is_some_and(|n| n.starts_with(fitted)), "{json}");
    let out = dir.path().join("s.json");
    let o = goodput()
        .args(["sweep", "--estimate", "-q", "--concurrency", "1,16", "-n", "40"])
        .args(["--input-tokens", "256", "--output-tokens", "16", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let notes = read_json(&out)["analysis"]["notes"].to_string();
    assert!(notes.contains(note) && notes.contains("sent together (as here)") && notes.contains(energy), "{notes}");
    assert!(notes.contains(served), "{notes}");
    assert!(!notes.contains("uncalibrated"), "{notes}");
    // An uncalibrated family is said in a sweep's notes as an estimate says it.
    let o = goodput()
        .args(["sweep", "--estimate", "-q", "--gpu", "mi355x", "--concurrency", "1", "-n", "4", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let notes = read_json(&out)["analysis"]["notes"].to_string();
    assert!(notes.contains(uncalibrated) && !notes.contains(note), "{notes}");
}

/// `sweep --trace`: a point at each `--trace-speed`, its load the rate the
/// trace offers at that speed and its result naming the trace and speed,
/// every request of the trace sent and answered; the search places a point
/// between two speeds as between two rates; and what a trace cannot be
/// swept with is refused with its fix.
#[test]
fn a_sweep_replays_a_trace_at_each_speed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    // 12 requests over 2.2 s: 12 / 2.2 req/s at speed 1.
    let lines: Vec<String> = (0..12)
        .map(|i| format!(r#"{{"timestamp": {:.1}, "input_tokens": {}, "output_tokens": 6}}"#, i as f64 * 0.2, 64 + i))
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let out = dir.path().join("s.json");
    let o = goodput()
        .args(["sweep", "--estimate", "--model", "llama-3.1-8b", "--trace"])
        .arg(&trace)
        .args(["--trace-speed", "0.5,2", "--slo", "ttft:p50<=60s", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    assert_eq!(doc["config"]["mode"], "trace", "{}", doc["config"]);
    let points = doc["points"].as_array().unwrap();
    let base = 12.0 / 2.2;
    for (p, speed) in points.iter().zip([0.5, 2.0]) {
        let rate = p["load"]["value"].as_f64().unwrap();
        assert!((rate - base * speed).abs() < 1e-9 * rate, "{rate} at speed {speed}");
        assert_eq!(p["load"]["kind"], "rate");
        assert_eq!(p["origin"], format!("trace {speed}×"));
        assert_eq!(p["result"]["config"]["load"]["trace_speed"], speed, "{}", p["result"]["config"]["load"]);
        assert_eq!(p["result"]["summary"]["requests"]["completed"], 12, "the whole trace is replayed");
    }
    // The trace's own lengths are the prompts: a workload of its lengths, not the default one.
    assert!(doc["config"]["workload"]["trace"].is_object(), "{}", doc["config"]["workload"]);
    // Every point met the SLO: the search has nothing between them to place.
    assert_eq!(points.len(), 2);
    // A limit between the TTFT of a slow replay and of the whole trace at once (found, not assumed): the
    // search replays the trace at speeds between, each point's load the rate its speed offers.
    let p90 =
        |doc: &serde_json::Value, i: usize| doc["points"][i]["result"]["summary"]["ttft_ms"]["p90"].as_f64().unwrap();
    let sweep = |speeds: &str, slo: Option<String>| {
        let mut c = goodput();
        c.args(["sweep", "--estimate", "--model", "llama-3.1-8b", "--trace"])
            .arg(&trace)
            .args(["--trace-speed", speeds]);
        c.args(slo.iter().flat_map(|s| ["--slo".to_string(), s.clone()])).arg("-o").arg(&out);
        assert!(c.output().unwrap().status.success());
        read_json(&out)
    };
    let ends = sweep("0.5,1000", None);
    let (slow, burst) = (p90(&ends, 0), p90(&ends, 1));
    assert!(burst > slow, "{slow} ms at 0.5×, {burst} ms at 1000×");
    let searched = sweep("0.5,1000", Some(format!("ttft:p90<={}ms", (slow * burst).sqrt())));
    let between: Vec<&serde_json::Value> =
        searched["points"].as_array().unwrap().iter().filter(|p| p["origin"] == "search").collect();
    assert!(!between.is_empty(), "{}", searched["points"]);
    for p in between {
        let (rate, speed) =
            (p["load"]["value"].as_f64().unwrap(), p["result"]["config"]["load"]["trace_speed"].as_f64().unwrap());
        assert!(
            (rate / base - speed).abs() < 1e-9 * speed && speed > 0.5 && speed < 1000.0,
            "{rate} req/s at {speed}×"
        );
    }
    for (flags, says) in [
        (&["--trace-speed", "1", "--arrival", "gamma", "--burstiness", "0.5"][..], "drop --arrival and --burstiness"),
        (&["--rate", "2"][..], "cannot be used with"),
        (&["--trace-speed", "0"][..], "each speed must be a positive number"),
        (&["--trace-speed", "2,1,2"][..], "names 2 twice"),
    ] {
        let o = goodput().args(["sweep", "--estimate", "--trace"]).arg(&trace).args(flags).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{flags:?}: {err}");
    }
    // A trace sent all at once has no rate to scale.
    let burst = dir.path().join("burst.jsonl");
    std::fs::write(&burst, "{\"timestamp\": 0, \"input_tokens\": 8, \"output_tokens\": 2}\n".repeat(3)).unwrap();
    let o = goodput().args(["sweep", "--estimate", "--trace"]).arg(&burst).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("no rate to replay at speeds"), "{err}");
}

/// The two public MI300X prefills CDNA3's note quotes (docs/simulator.md,
/// "MI300X: fitted on AMD's table of October 2025"), recomputed: the
/// engine's mean TTFT against dstack's Llama-3.1-405B prompt of 10,000
/// tokens under TGI on eight (3,799 ms) and an SGLang `bench_latency` of
/// Llama-3-8B's 32 prompts of 256 tokens on one (250.7 ms prefilled).
#[test]
fn the_mi300x_prefills_the_note_quotes_are_the_engines() {
    let dir = tempfile::tempdir().unwrap();
    let ttft = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "--gpu", "mi300x", "--precision", "bf16", "--warmup", "0", "--api", "completions"])
            .args(args)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)["summary"]["ttft_ms"]["mean"].as_f64().unwrap()
    };
    let big = ttft(
        "405b.json",
        &[
            "--model",
            "llama-3.1-405b",
            "--tp",
            "8",
            "-c",
            "1",
            "-n",
            "1",
            "--input-tokens",
            "10000",
            "--output-tokens",
            "100",
        ],
    );
    let small = ttft(
        "8b.json",
        &[
            "--model",
            "llama-3-8b",
            "--scheduler",
            "sglang",
            "-c",
            "32",
            "-n",
            "32",
            "--input-tokens",
            "256",
            "--output-tokens",
            "32",
        ],
    );
    let pct = |predicted: f64, measured: f64| (predicted / measured - 1.0) * 100.0;
    use goodput_sim::engine::accuracy::{CDNA3_PREFILL_405B_PCT, CDNA3_PREFILL_8B_PCT};
    assert_eq!(format!("{:+.1}", pct(big, 3799.42)), format!("{CDNA3_PREFILL_405B_PCT:+.1}"), "{big} ms");
    assert_eq!(format!("{:+.0}", pct(small, 250.74)), format!("{CDNA3_PREFILL_8B_PCT:+.0}"), "{small} ms");
}
