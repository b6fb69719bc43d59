//! `goodput plan` on the 8B model over a small grid: its frontier document
//! validates against the schema, no frontier point is dominated and every
//! other point is, the best point meets the SLO, more GPUs of a type never
//! lower the best total throughput, and `report` renders the saved frontier
//! again.

use crate::cmd;
use crate::schema::assert_valid;

use cmd::{goodput, read_json, GoodputCommand};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::Path;

/// A small, fast plan: 8B, short requests, few loads.
fn plan(dir: &Path, name: &str, gpus: &[&str], budget: u32, extra: &[&str]) -> Value {
    plan_at(dir, name, gpus, budget, "bf16,fp8", extra)
}

/// [`plan`] at the widths `precision` names.
fn plan_at(dir: &Path, name: &str, gpus: &[&str], budget: u32, precision: &str, extra: &[&str]) -> Value {
    let out = dir.join(name);
    let mut c = goodput();
    c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpus", &budget.to_string()]);
    for g in gpus {
        c.args(["--gpu", g]);
    }
    c.args(["--tp", "1,2", "--precision", precision, "--max-num-batched-tokens", "2048"])
        .args(["--input-tokens", "256", "--output-tokens", "32", "--concurrency", "1,8,32"])
        .args(["--requests-per-user", "2", "--jobs", "2"])
        .args(extra)
        .arg("-o")
        .arg(&out);
    let o = c.output().unwrap();
    assert!(o.status.success(), "plan failed: {}", String::from_utf8_lossy(&o.stderr));
    read_json(&out)
}

/// `plan` predicts every configuration a step ahead, as the servers run by
/// default, and `--no-async-scheduling` each step after the one before:
/// the same TTFT for a lone user, a shorter one under load; its parameters
/// name it, each server's command turns it off, and the notes say which
/// way the plan went. `--async-scheduling` is the default here.
#[test]
fn plan_predicts_a_scheduler_a_step_ahead_by_default_and_without_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    // One GPU: TP 1 alone, in FP8.
    let run = |name: &str, extra: &[&str]| plan_at(dir.path(), name, &["h100=2.5"], 1, "fp8", extra);
    let (ahead, not) = (run("ahead.json", &[]), run("not.json", &["--no-async-scheduling"]));
    assert_valid(&not, "FrontierResult", "plan --no-async-scheduling");
    let ttfts = |d: &Value| -> Vec<f64> {
        d["configs"][0]["points"].as_array().unwrap().iter().map(|p| p["ttft_ms"].as_f64().unwrap()).collect()
    };
    let (t, a) = (ttfts(&not), ttfts(&ahead));
    assert_eq!(t.len(), 3);
    assert!((a[0] - t[0]).abs() < 1e-6, "one user: {a:?} against {t:?}");
    assert!(a[1] > t[1] && a[2] > t[2], "under load: {a:?} against {t:?}");
    assert_eq!(ttfts(&run("given.json", &["--async-scheduling"])), a, "the default");
    let config = &not["configs"][0];
    assert_eq!(config["params"]["async_scheduling"], "false");
    assert!(ahead["configs"][0]["params"].get("async_scheduling").is_none());
    let command = |d: &Value| d["configs"][0]["serve_command"]["command"].as_str().unwrap().to_string();
    assert!(command(&not).contains(" --no-async-scheduling"), "{}", command(&not));
    assert!(!command(&ahead).contains("async"), "{}", command(&ahead));
    let said = |d: &Value| d["notes"].to_string();
    assert!(said(&ahead).contains("predicted with its scheduler a step ahead, as the servers run"), "{}", said(&ahead));
    assert!(said(&ahead).contains("plan with --no-async-scheduling"), "{}", said(&ahead));
    assert!(said(&not).contains("each step chosen after the one before ends"), "{}", said(&not));
    // SGLang's command turns its overlap schedule off.
    let sglang = run("sglang.json", &["--no-async-scheduling", "--serve-engine", "sglang"]);
    assert!(command(&sglang).contains(" --disable-overlap-schedule"), "{}", command(&sglang));
}

fn xy(p: &Value) -> Option<(f64, f64)> {
    Some((p["tokens_per_s_per_user"].as_f64()?, p["output_tokens_per_s_per_gpu"].as_f64()?))
}

fn dominates(a: (f64, f64), b: (f64, f64)) -> bool {
    a.0 >= b.0 && a.1 >= b.1 && (a.0 > b.0 || a.1 > b.1)
}

/// Every point of the configurations that ran, by (config, point).
fn points(doc: &Value) -> Vec<((u64, u64), (f64, f64))> {
    let mut v = Vec::new();
    for (ci, c) in doc["configs"].as_array().unwrap().iter().enumerate() {
        if c["status"] != "ok" {
            continue;
        }
        for (pi, p) in c["points"].as_array().unwrap().iter().enumerate() {
            if let Some(xy) = xy(p) {
                v.push(((ci as u64, pi as u64), xy));
            }
        }
    }
    v
}

#[test]
fn plan_writes_a_valid_undominated_frontier_and_report_renders_it() {
    let dir = tempfile::tempdir().unwrap();
    let slo = ["--slo", "ttft:p90<=2s,tpot:p90<=40ms"];
    let doc = plan(dir.path(), "plan.json", &["h100=2.5", "h200=3.2"], 2, &slo);
    assert_eq!((doc["kind"].as_str(), doc["source"].as_str()), (Some("frontier"), Some("predicted")));
    assert_valid(&doc, "FrontierResult", "plan");
    assert_eq!(doc["percentile"], 90.0);
    // Each note once (groups that differ only in their batch limits had
    // each said where their TP climb stopped).
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    let mut unique = notes.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), notes.len(), "{notes:#?}");
    // The engine's held-out TTFT error is said beside the TTFT column.
    let accuracy = notes.iter().find(|n| n.starts_with("accuracy: TTFT under load")).expect("an accuracy note");
    assert!(accuracy.contains("started apart (as here) was below every one"), "{accuracy}");
    // And the power model's error on a GPU's measured steps beside J/tok.
    assert!(notes.iter().any(|n| n.starts_with("energy: the power model was checked")), "{notes:#?}");
    // vLLM's servers on Hopper at load: faster in the engine than measured.
    let served = "accuracy: under load on vLLM's scheduler on Hopper the engine was faster than served runs";
    assert_eq!(notes.iter().filter(|n| n.starts_with(served)).count(), 1, "{notes:#?}");

    let all = points(&doc);
    assert!(all.len() >= 8, "too few points: {doc}");
    let front: Vec<(u64, u64)> = doc["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["config"].as_u64().unwrap(), f["point"].as_u64().unwrap()))
        .collect();
    assert!(!front.is_empty());
    let at = |id: (u64, u64)| all.iter().find(|p| p.0 == id).map(|p| p.1).expect("a frontier id names a point");
    for &f in &front {
        assert!(all.iter().all(|p| !dominates(p.1, at(f))), "frontier point {f:?} is dominated");
    }
    for p in all.iter().filter(|p| !front.contains(&p.0)) {
        assert!(front.iter().any(|&f| dominates(at(f), p.1)), "{:?} is off the frontier but undominated", p.0);
    }
    // Rising speed per user along the frontier, falling throughput per GPU.
    for w in front.windows(2) {
        assert!(at(w[0]).0 <= at(w[1]).0 && at(w[0]).1 >= at(w[1]).1, "{front:?}");
    }

    // The best point meets the SLO and is priced.
    let best = &doc["best"];
    let b = &doc["configs"][best["at"]["config"].as_u64().unwrap() as usize]["points"]
        [best["at"]["point"].as_u64().unwrap() as usize];
    assert_eq!(b["meets_slo"], true, "{best}");
    assert!(best["good_tokens_per_usd"].as_f64().unwrap() > 0.0);
    assert!(b["usd_per_million_output_tokens"].as_f64().unwrap() > 0.0);
    // The engine's power model gives each point its energy.
    assert!(b["joules_per_output_token"].as_f64().unwrap() > 0.0, "{b}");
    assert!(b["output_tokens_per_s_per_mw"].as_f64().unwrap() > 0.0, "{b}");
    // Every configuration off the frontier says why.
    let on: Vec<u64> = front.iter().map(|f| f.0).collect();
    for (i, c) in doc["configs"].as_array().unwrap().iter().enumerate() {
        assert_eq!(c["dominated"].is_string(), !on.contains(&(i as u64)), "{c}");
        assert_eq!(c["gpus"], 2, "TP and replicas fill the budget: {c}");
    }

    // report reads it back: the terminal, CSV and HTML.
    let (csv, html) = (dir.path().join("csv"), dir.path().join("f.html"));
    let o = goodput()
        .arg("report")
        .arg(dir.path().join("plan.json"))
        .arg("--csv")
        .arg(&csv)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("predicted frontier") && stdout.contains("best: "), "{stdout}");
    let csv = std::fs::read_to_string(csv.join("frontier.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + all.len(), "a row per point:\n{csv}");
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains(r#"data-report="frontier""#) && html.contains(r#"data-chart="frontier""#));
    // The TTFT tile points to the accuracy note, which the notes hold.
    assert!(
        html.contains("p90 · predicted: under load the engine's least certain figure (Notes)"),
        "the TTFT tile's caveat"
    );
    assert!(html.contains("<li>accuracy: TTFT under load is the engine"), "the accuracy note");
    // The legend names each thing once (a ring at a configuration's point is
    // told by its label on the chart, not by a second entry of the curve's
    // name), and the best's configuration has one ring, the best's.
    let legend = html.split(r#"<div class="legend">"#).nth(1).unwrap().split("</div>").next().unwrap();
    let names: Vec<&str> =
        legend.split("</span>").filter_map(|s| s.rsplit('>').next()).filter(|s| !s.is_empty()).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    let best = doc["configs"][doc["best"]["at"]["config"].as_u64().unwrap() as usize]["id"].as_str().unwrap();
    assert!(html.contains(&format!(">best: {best}</text>")), "{best}");
    assert!(!html.contains(&format!(">{best}</text>")), "the best's configuration has a second ring: {best}");
    // A saved frontier is not re-judged.
    let err = goodput().arg("report").arg(dir.path().join("plan.json")).args(["--slo", "ttft<=1s"]).refusal();
    assert!(err.contains("is a frontier"), "{err}");
    // An edited one that names a point it does not hold is refused (it had
    // panicked report), as is a figure no search gives.
    type Edit = fn(&mut Value);
    let edits: [(&str, Edit); 3] = [
        ("names point", |d| d["frontier"][0]["config"] = 99.into()),
        ("names point", |d| d["best"]["at"]["point"] = 99.into()),
        ("a figure of -1", |d| d["configs"][0]["points"][0]["ttft_ms"] = (-1.0).into()),
    ];
    for (said, edit) in edits {
        let mut edited = doc.clone();
        edit(&mut edited);
        let path = dir.path().join("edited.json");
        std::fs::write(&path, edited.to_string()).unwrap();
        let err = goodput().arg("report").arg(&path).args(["--html"]).arg(dir.path().join("e.html")).refusal();
        assert!(err.contains("edited or damaged") && err.contains(said), "{err}");
    }
}

#[test]
fn more_gpus_of_a_type_never_lower_the_best_total_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let best = |doc: &Value| {
        doc["configs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["points"].as_array().unwrap().iter())
            .filter_map(|p| p["output_tokens_per_s"].as_f64())
            .fold(0.0, f64::max)
    };
    let mut last = 0.0;
    for budget in [1, 2, 4] {
        let doc = plan(dir.path(), &format!("b{budget}.json"), &["h100=2"], budget, &[]);
        let b = best(&doc);
        assert!(b >= last, "{budget} GPUs: best total {b:.0} tok/s, below {last:.0} with fewer");
        last = b;
    }
}

#[test]
fn plan_refuses_what_it_cannot_search() {
    let err = goodput().args(["plan", "--gpu", "h100=cheap"]).refusal();
    assert!(err.contains("not a price per GPU-hour"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--gpu", "H100=2"]).refusal();
    assert!(err.contains("given twice"), "{err}");
    let err = goodput().args(["plan", "--gpu", "nosuchgpu"]).refusal();
    assert!(err.contains("nosuchgpu"), "{err}");
    // 405B in BF16 fits on no single H100 with a budget of one.
    let err = goodput().args(["plan", "--model", "llama-3.1-405b", "--gpu", "h100", "--gpus", "1"]).refusal();
    assert!(err.contains("no configuration is left") && err.contains("left out"), "{err}");
    // One configuration a line: the message's own line breaks reach the
    // terminal as breaks, not as `\u{a}`.
    assert!(err.lines().filter(|l| l.contains("left out")).count() >= 2 && !err.contains("\\u{a}"), "{err}");
    // One GPU by two of its names, and a price past any GPU's (1e308 made
    // every cost overflow, and the best point the worst).
    let err = goodput().args(["plan", "--gpu", "h100", "--gpu", "h100-sxm"]).refusal();
    assert!(err.contains("--gpu h100-sxm is given twice (as h100: both are H100 SXM)"), "{err}");
    // Lists whose configurations pass the cap are refused before the search
    // (1,000 × 1,000 batch limits had run for hours in gigabytes).
    let seqs: Vec<String> = (1..=101).map(|i| i.to_string()).collect();
    let tokens: Vec<String> = (1..=100).map(|i| (64 * i).to_string()).collect();
    let err = goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--tp", "1", "--precision", "bf16"])
        .args(["--max-num-seqs", &seqs.join(","), "--max-num-batched-tokens", &tokens.join(",")])
        .refusal();
    assert!(err.contains("more than 10000 configurations"), "{err}");
    // No configuration can run the load: an error, not an empty frontier (it had exited 0).
    let err = goodput().args(["plan", "-q", "--gpu", "h100=2", "--gpus", "1", "--concurrency", "1000000"]).refusal();
    assert!(err.contains("no configuration completed a request") && err.contains("batch limit"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100=1e308"]).refusal();
    assert!(err.contains("h100=1e308 is more than a GPU costs an hour"), "{err}");
    // ... and one too small to divide by (5e-324 had given "inf M tokens per dollar").
    let err = goodput().args(["plan", "--gpu", "h100=5e-324"]).refusal();
    assert!(err.contains("less than a millionth of a dollar an hour"), "{err}");
    let err = goodput().args(["estimate", "-n", "2", "--gpu-hour-usd", "1e-9"]).refusal();
    assert!(err.contains("--gpu-hour-usd 1e-9 is less than a millionth"), "{err}");
    // Settings plan has no use for are refused, not ignored: its points are
    // closed loops or a trace, never an open-loop schedule, and each needs
    // a request; a split past the GPU cap is named as typed (it had been
    // clamped to 4,096 first, and the refusal named that).
    let err = goodput().args(["plan", "--gpu", "h100", "--arrival", "gamma"]).refusal();
    assert!(err.contains("--arrival and --burstiness shape an open-loop"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--burstiness", "0.1"]).refusal();
    assert!(err.contains("which plan does not run"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "-n", "0"]).refusal();
    assert!(err.contains("at least 1 request"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--ep", "4294967295"]).refusal();
    assert!(err.contains("--ep 4294967295: more GPUs than the most a plan may take (--gpus at most 4096)"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--tp", "1,4294967298"]).refusal();
    assert!(err.contains("--tp 4294967298"), "{err}");
    // A draft acceptance or cost outside [0, 1] is the flag's error, before
    // the search: it had run every configuration, failed each drafting one,
    // and written an empty frontier.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    for (flag, value) in [("--spec-acceptance", "1.5"), ("--spec-draft-cost", "nan")] {
        let err = goodput()
            .args(["plan", "--gpu", "h100", "--gpus", "1", "--spec-tokens", "0,3", flag, value, "-o"])
            .arg(&out)
            .refusal();
        assert!(err.contains(&format!("{flag} ")) && err.contains("must lie in [0, 1]"), "{err}");
        assert!(!err.contains("no configuration completed"), "{err}");
        assert!(!out.exists(), "nothing written");
    }
}

/// vLLM's sequence cap against its step budget: a cap given above a budget
/// is left out at that budget with a note (vLLM refuses it), the default
/// cap is held to a smaller budget as vLLM holds it, in the parameters and
/// the command, and a search with nothing left says why. Behind SGLang,
/// which takes the pair, it runs, but for disaggregated ratios.
#[test]
fn a_batch_limit_above_the_token_budget_is_left_out_as_vllm_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, limits: &[&str]| {
        let out = dir.path().join(name);
        let mut c = goodput();
        c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1", "--tp", "1", "--pp", "1"])
            .args(["--precision", "fp8", "--input-tokens", "128", "--output-tokens", "8", "--concurrency", "1,4"])
            .args(["--requests-per-user", "2"])
            .args(limits)
            .arg("-o")
            .arg(&out);
        (c, out)
    };
    let (mut c, out) = run("given.json", &["--max-num-seqs", "16,1024", "--max-num-batched-tokens", "512,2048"]);
    c.assert().success();
    let doc = read_json(&out);
    let mut limits: Vec<(&str, &str)> = doc["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (c["params"]["max_num_seqs"].as_str().unwrap(), c["params"]["max_num_batched_tokens"].as_str().unwrap())
        })
        .collect();
    limits.sort_unstable();
    assert_eq!(limits, [("1024", "2048"), ("16", "2048"), ("16", "512")], "{}", doc["configs"]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("--max-num-seqs 1024 with --max-num-batched-tokens 512: left out, vLLM refuses"), "{notes}");
    // vLLM's default cap of an H100 (1,024) held to a 512-token budget.
    let (mut c, out) = run("default.json", &["--max-num-batched-tokens", "512"]);
    c.assert().success();
    let doc = read_json(&out);
    let config = &doc["configs"][0];
    assert_eq!(config["params"]["max_num_seqs"], "512", "{config}");
    let command = config["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains("--max-num-seqs 512 --max-num-batched-tokens 512"), "{command}");
    assert!(!doc["notes"].to_string().contains("left out, vLLM refuses"), "{}", doc["notes"]);
    // Nothing left: the reason and the fix.
    let (mut c, _) = run("none.json", &["--max-num-seqs", "1024", "--max-num-batched-tokens", "512"]);
    let err = c.refusal();
    assert!(err.contains("no configuration is left") && err.contains("give caps of at most 512"), "{err}");
    assert!(err.contains("vLLM refuses a sequence cap above"), "{err}");
    // SGLang takes the pair, its scheduler holding only its prompt chunks
    // to the budget: predicted with it, and started so.
    let (mut c, out) =
        run("sglang.json", &["--max-num-seqs", "1024", "--max-num-batched-tokens", "512", "--serve-engine", "sglang"]);
    c.assert().success();
    let doc = read_json(&out);
    let config = &doc["configs"][0];
    let params = &config["params"];
    assert_eq!((params["max_num_seqs"].as_str(), params["scheduler"].as_str()), (Some("1024"), Some("sglang")));
    let command = config["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains("--max-running-requests 1024 --chunked-prefill-size 512"), "{command}");
    assert!(!doc["notes"].to_string().contains("left out"), "{}", doc["notes"]);
    assert!(!doc["notes"].to_string().contains("SGLang's own default"), "{}", doc["notes"]);
    // Disaggregated, SGLang's instances run its scheduler too, whose decode
    // instance reserves before the prefill: those ratios take the pair.
    let out = dir.path().join("sglang-pd.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "2", "--tp", "1", "--pp", "1"])
        .args(["--precision", "fp8", "--input-tokens", "128", "--output-tokens", "8", "--concurrency", "1,4"])
        .args(["--requests-per-user", "2", "--max-num-seqs", "1024", "--max-num-batched-tokens", "512"])
        .args(["--serve-engine", "sglang", "--pd", "1:1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let configs = doc["configs"].as_array().unwrap();
    let apart: Vec<&Value> = configs.iter().filter(|c| c["params"].get("pd").is_some()).collect();
    assert!(!apart.is_empty(), "{}", doc["configs"]);
    for c in &apart {
        let params = &c["params"];
        assert_eq!((params["scheduler"].as_str(), params.get("mixed_batches")), (Some("sglang"), None), "{params}");
    }
    let notes = doc["notes"].to_string();
    assert!(!notes.contains("left out"), "{notes}");
    assert!(notes.contains("the decode instance reserves a request's prompt and 512 decoding tokens"), "{notes}");
    // `estimate` refuses the pair as vLLM does, naming both fixes.
    let err =
        goodput().args(["estimate", "-n", "2", "--max-num-seqs", "1024", "--max-num-batched-tokens", "512"]).refusal();
    assert!(
        err.contains("--max-num-seqs 1024 is above --max-num-batched-tokens 512: vLLM refuses it")
            && err.contains("give --max-num-seqs 512 or fewer, or --max-num-batched-tokens 1024 or more"),
        "{err}"
    );
    // And takes vLLM's defaults by GPU: an A100 80GB's are 2,048 tokens and
    // 256 sequences; TensorRT-LLM's scheduler keeps its own on any GPU.
    for (scheduler, limits) in [("vllm", (2048, 256)), ("trtllm", (8192, 2048))] {
        let out = dir.path().join(format!("a100-{scheduler}.json"));
        goodput()
            .args(["estimate", "-n", "2", "--gpu", "a100", "--scheduler", scheduler, "-o"])
            .arg(&out)
            .assert()
            .success();
        let engine = &read_json(&out)["config"]["engine"];
        let got = (engine["max_num_batched_tokens"].as_u64(), engine["max_num_seqs"].as_u64());
        assert_eq!(got, (Some(limits.0), Some(limits.1)), "{scheduler}: {engine}");
    }
}

/// `--spec-tokens 0,3` plans each configuration without and with three
/// draft tokens a step. Drafts win where decoding reads weights for few
/// sequences: at one user the drafting configuration is faster a user and
/// holds that end of the frontier; at a full batch, at a middling
/// acceptance, the verified drafts' compute costs more than the steps they
/// save, and the plain configuration carries more tokens a GPU. Each is
/// named and described in its id and params, and the note says the
/// acceptance is an assumption.
#[test]
fn speculative_decoding_is_searched_and_wins_the_fast_end_of_the_frontier() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spec.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-70b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "2"])
        .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "8192", "--concurrency", "1,128"])
        .args(["--spec-tokens", "0,3", "--spec-acceptance", "0.5", "--spec-draft-cost", "0.1"])
        .args(["--input-tokens", "1024", "--output-tokens", "256", "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --spec-tokens");
    let configs = doc["configs"].as_array().unwrap();
    let ids: Vec<&str> = configs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["h100-sxm tp2x1 fp8 mbt8192", "h100-sxm tp2x1 fp8 mbt8192 spec3"]);
    let (plain, spec) = (&configs[0], &configs[1]);
    assert!(plain["params"].get("spec_tokens").is_none(), "{}", plain["params"]);
    assert_eq!(spec["params"]["spec_tokens"], "3");
    assert_eq!(spec["params"]["spec_acceptance"], "0.5");
    assert_eq!(spec["params"]["spec_draft_cost"], "0.1");
    let at = |c: &Value, users: u64| {
        let p = c["points"].as_array().unwrap().iter().find(|p| p["load"]["value"] == users).unwrap();
        xy(p).unwrap()
    };
    // One user: drafts make each step yield 1.875 tokens on average, so
    // well over a third faster; 128 users: the plain engine ahead per GPU.
    let (one_plain, one_spec) = (at(plain, 1), at(spec, 1));
    assert!(one_spec.0 > 1.3 * one_plain.0, "{one_plain:?} {one_spec:?}");
    let (full_plain, full_spec) = (at(plain, 128), at(spec, 128));
    assert!(full_plain.1 > full_spec.1, "{full_plain:?} {full_spec:?}");
    // The frontier holds both: the drafting one's single user, the plain
    // one's full batch.
    let on: Vec<(&str, &Value)> = doc["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                ids[r["config"].as_u64().unwrap() as usize],
                &configs[r["config"].as_u64().unwrap() as usize]["points"][r["point"].as_u64().unwrap() as usize]
                    ["load"]["value"],
            )
        })
        .collect();
    assert!(on.contains(&(ids[1], &Value::from(1))) && on.contains(&(ids[0], &Value::from(128))), "{on:?}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("accepted with chance 0.5") && notes.contains("assumptions, not measurements"), "{notes}");
    // The acceptance without any draft is refused, not ignored; a draft
    // length past the engine's is named.
    let err = goodput().args(["plan", "--gpu", "h100", "--spec-acceptance", "0.6"]).refusal();
    assert!(err.contains("which --spec-tokens turns on"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--spec-tokens", "0,17"]).refusal();
    assert!(err.contains("17 draft tokens: at most 16"), "{err}");
}

#[test]
fn plan_runs_a_precision_once_and_says_when_no_pool_fits() {
    let run = |extra: &[&str]| {
        let o = goodput()
            .args(["plan", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--tp", "1", "--gpus", "8"])
            .args(["--max-num-batched-tokens", "2048", "--concurrency", "1,4", "--requests-per-user", "2"])
            .args(["--output-tokens", "16", "--jobs", "1", "--pp", "1"])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    };
    // bf16,bf16 had run every point twice; it is now refused, as --tp 1,1
    // is (lists_that_name_a_value_twice_are_refused_alike), and bf16 runs once.
    let once = run(&["--precision", "bf16"]);
    assert!(once.contains("1 configuration (1 ran"), "{once}");
    // FP16 is BF16 here, and said so (it had been run as BF16 without a word).
    let half = run(&["--precision", "fp16"]);
    assert!(half.contains("--precision fp16 is planned as bf16"), "{half}");
    // Five and five instances of TP 1 are ten GPUs, over a budget of 8: said, not dropped in silence.
    let pd = run(&["--precision", "bf16", "--pd", "5:5"]);
    assert!(pd.contains("--pd 5:5: no ratio fit the budget of 8 GPUs"), "{pd}");
}

/// A GPU whose family no public measurement calibrated (MI355X, on
/// Hopper's constants) is said in the notes, with how it stands against
/// the calibrated GPUs, and on the best point when it wins; the document
/// names it, and the CSV's rows, the HTML's legend, tables and tips and
/// the terminal's rows mark its configurations. A plan of calibrated GPUs
/// alone says nothing of it.
#[test]
fn a_plan_says_which_gpus_are_uncalibrated_and_when_the_best_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let (csv, html) = (dir.path().join("mixed.csv"), dir.path().join("mixed.html"));
    let files = [OsStr::new("--csv"), csv.as_os_str(), OsStr::new("--html"), html.as_os_str()];
    // Priced to win: a tenth of the H100's hour.
    let doc = plan(dir.path(), "mixed.json", &["mi355x=0.5", "h100=5"], 1, &files.map(|f| f.to_str().unwrap()));
    assert_eq!(doc["uncalibrated_gpus"], serde_json::json!(["MI355X"]), "{}", doc["uncalibrated_gpus"]);
    let csv = std::fs::read_to_string(&csv).unwrap();
    let mut rows = csv.lines();
    let head: Vec<&str> = rows.next().unwrap().split(',').collect();
    let (gpu, calibrated) =
        (head.iter().position(|c| *c == "gpu").unwrap(), head.iter().position(|c| *c == "gpu_calibrated").unwrap());
    let mut seen = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.split(',').collect();
        seen.push((cells[gpu], cells[calibrated]));
    }
    assert!(seen.contains(&("MI355X", "false")) && seen.contains(&("H100 SXM", "true")), "{seen:?}");
    assert!(seen.iter().all(|&(g, c)| (g == "MI355X") == (c == "false")), "{seen:?}");
    let page = std::fs::read_to_string(&html).unwrap();
    for said in [
        "MI355X (uncalibrated)",
        "MI355X is uncalibrated (so marked in the legend)",
        ">uncalibrated GPU</span>",
        " · uncalibrated GPU",
        " · uncalibrated GPU: measure it before choosing it</",
    ] {
        assert!(page.contains(said), "the page lacks {said:?}");
    }
    // The terminal's table, from the document.
    let shown = goodput().arg("report").arg(dir.path().join("mixed.json")).output().unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout);
    let marked: Vec<&str> = shown.lines().filter(|l| l.contains("mbt2048  concurrency")).collect();
    assert!(
        !marked.is_empty() && marked.iter().all(|l| l.starts_with("GPU $ mi355x") == l.ends_with("(uncalibrated GPU)")),
        "{shown}"
    );
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    let said: Vec<&&str> = notes.iter().filter(|n| n.contains("uncalibrated")).collect();
    assert_eq!(said.len(), 1, "{notes:?}");
    assert!(
        said[0].starts_with("MI355X (cdna4) is uncalibrated: it runs on CDNA3's constants")
            && said[0]
                .contains("its mean TTFT, TPOT and output tokens/s came within 18.0, 11.8 and 13.3 % at the median")
            && said[0].contains("configurations share that: its points, and how they stand against the other GPUs'"),
        "{}",
        said[0]
    );
    let best = &doc["best"];
    let at = best["at"]["config"].as_u64().unwrap() as usize;
    assert_eq!(doc["configs"][at]["gpu"], "MI355X", "{best}");
    let reason = best["reason"].as_str().unwrap();
    assert!(reason.contains("on MI355X, whose family (cdna4) is uncalibrated"), "{best}");
    // With what a calibrated GPU gives instead: the plan of the H100 alone's best.
    let calibrated = plan(dir.path(), "h100.json", &["h100=5"], 1, &[]);
    assert!(!calibrated.to_string().contains("uncalibrated"), "{calibrated}");
    let alone = calibrated["best"]["reason"].as_str().unwrap();
    assert!(alone.starts_with("h100-sxm "), "{alone}");
    assert!(reason.ends_with(&format!("; on a calibrated GPU the best is {alone}")), "{reason}\n{alone}");
    // CDNA3 has constants of its own: unmarked, its note says what their
    // check leaves out.
    let cdna3 = plan(dir.path(), "cdna3.json", &["mi300x=0.5", "h100=5"], 1, &[]);
    assert!(cdna3["uncalibrated_gpus"].as_array().is_none_or(|a| a.is_empty()), "{}", cdna3["uncalibrated_gpus"]);
    let notes = cdna3["notes"].to_string();
    assert!(
        notes.contains("MI300X (cdna3) runs on constants fitted on AMD's offline vLLM runs")
            && notes.contains("its mean TTFT, TPOT and output tokens/s came within 14.7, 9.8 and 10.6 % at the median")
            && !notes.contains("uncalibrated"),
        "{notes}"
    );
}

/// The first configuration's error of a plan of one H100 at FP8 with
/// `args`, which fails (the plan, with nothing run, exits 1 and still
/// writes its document).
fn failed_config(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "1", "--tp", "1", "--precision", "fp8", "-o"])
        .arg(&out)
        .args(args)
        .assert()
        .code(1);
    let doc = read_json(&out);
    let config = &doc["configs"][0];
    assert_eq!(config["status"], "failed", "{config}");
    config["error"].as_str().unwrap().to_owned()
}

/// Loads given past a configuration's batch limit are left out, as users
/// that would only queue; when that leaves none, the configuration says
/// so (it said only that no request gave a TPOT).
#[test]
fn a_configuration_whose_every_load_is_past_its_batch_limit_says_so() {
    let err = failed_config(&["--max-num-seqs", "2", "--max-num-batched-tokens", "2048", "--concurrency", "4,64"]);
    assert!(err.starts_with("every --concurrency given (4,64) is above this configuration's batch limit"), "{err}");
    assert!(err.contains("at most 2 sequences at once") && err.ends_with("give loads of at most 2"), "{err}");
}

/// Each point's run may hold its share of a virtual run's memory, the
/// points of `--jobs` running at once: past it the configuration says so,
/// with the fix (it once aborted when the jobs together ran out).
#[test]
fn a_point_too_big_for_its_share_of_memory_says_so() {
    let err = failed_config(&[
        "--jobs",
        "4",
        "--max-num-batched-tokens",
        "8192",
        "--concurrency",
        "1000",
        "--requests-per-user",
        "500",
    ]);
    assert!(err.contains("over a virtual run's 2.0 GB (its share of 8 GB"), "{err}");
    assert!(err.contains("fewer --jobs gives it more"), "{err}");
}

/// `--precision auto` tries FP4 where the GPU has it (B200), and not where
/// it does not (H100), without a note for the one it skips.
#[test]
fn auto_precision_tries_fp4_on_blackwell_only() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("p.json");
    goodput()
        .args(["plan", "-q", "--gpu", "b200=6", "--gpu", "h100=2.5", "--gpus", "1", "--tp", "1"])
        .args(["--max-num-batched-tokens", "2048", "--input-tokens", "128", "--output-tokens", "16"])
        .args(["--concurrency", "1,8", "--requests-per-user", "2", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let precisions = |gpu: &str| -> Vec<String> {
        doc["configs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["params"]["gpu"] == gpu)
            .map(|c| c["params"]["precision"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(precisions("b200"), ["bf16", "fp8", "fp4"], "{doc}");
    assert_eq!(precisions("h100-sxm"), ["bf16", "fp8"], "{doc}");
    assert!(!doc["notes"].to_string().contains("fp4"), "{}", doc["notes"]);
}

/// With `--trace`, power-of-two replicas behind SGLang's router are
/// predicted on the loads its script polls every second: between polls a
/// pair's lighter replica takes every request, so the p99 TTFT and TPOT
/// come out above vLLM router's, which routes on live counts. The even
/// split's note is for plans without a trace.
#[test]
fn plan_predicts_sglangs_power_of_two_on_the_loads_it_polls() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    // 400 requests over 8 s, 1,024 tokens in and 64 out: at twice the
    // trace's speed, 100 requests/s over four replicas.
    let lines: Vec<String> = (0..400)
        .map(|i| format!(r#"{{"timestamp": {:.2}, "input_tokens": 1024, "output_tokens": 64}}"#, i as f64 * 0.02))
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let p99 = |engine: &str| {
        let out = dir.path().join(format!("{engine}.json"));
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "4", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--percentile", "99"])
            .args(["--router", "power-of-two", "--trace-speed", "2", "--serve-engine", engine, "--trace"])
            .arg(&trace)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        let doc = read_json(&out);
        let notes = doc["notes"].to_string();
        assert!(!notes.contains("SGLang's router runs power-of-two"), "{notes}");
        let c = &doc["configs"][0];
        assert_eq!((c["params"]["router"].as_str(), c["params"]["dp"].as_str()), (Some("power-of-two"), Some("4")));
        let p = &c["points"][0];
        assert_eq!(p["completed"], 400, "{p}");
        (p["ttft_ms"].as_f64().unwrap(), p["tpot_ms"].as_f64().unwrap())
    };
    let ((vllm_ttft, vllm_tpot), (sglang_ttft, sglang_tpot)) = (p99("vllm"), p99("sglang"));
    assert!(sglang_ttft > 1.3 * vllm_ttft, "p99 TTFT: SGLang's {sglang_ttft} ms, vLLM's {vllm_ttft} ms");
    assert!(sglang_tpot > vllm_tpot, "p99 TPOT: SGLang's {sglang_tpot} ms, vLLM's {vllm_tpot} ms");
}

/// Without a trace, expert-parallel groups behind SGLang's power_of_two
/// run whole, their users sent through the router and its polls (vLLM
/// router's between two groups, on live counts, is least-loaded: one group
/// stands for each): the same requests per replica complete, and SGLang's
/// tail is the longer.
#[test]
fn plan_runs_sglangs_polled_power_of_two_whole_without_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    // Qwen3-30B-A3B at TP 1 and EP 2 (groups of two GPUs) on `gpus`, under
    // `load`, for `engine`'s servers: the plan's document.
    let plan = |name: &str, gpus: &str, load: &[&str], engine: &str| {
        let out = dir.path().join(format!("{name}-{engine}.json"));
        goodput()
            .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2.5", "--gpus", gpus, "--tp", "1"])
            .args(["--ep", "2", "--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048"])
            .args(load)
            .args(["--serve-engine", engine, "-o"])
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let run = |engine: &str| {
        let load = ["--concurrency", "32", "--requests-per-user", "6", "--input-tokens", "1024"];
        let doc = plan("two", "4", &[&load[..], &["--output-tokens", "64", "--percentile", "99"]].concat(), engine);
        let whole = doc["notes"].as_array().unwrap().iter().any(|n| {
            n.as_str().is_some_and(|n| n.contains("The configurations behind it ran whole (up to 8 replicas or groups"))
        });
        assert_eq!(whole, engine == "sglang", "{}", doc["notes"]);
        let c = &doc["configs"][0];
        assert_eq!(c["params"]["router"].as_str(), Some("power-of-two"), "{c}");
        let p = &c["points"][0];
        // 32 users a group, two groups: 64 users and 384 requests either way.
        assert_eq!((p["load"]["value"].as_u64(), p["completed"].as_u64()), (Some(64), Some(384)), "{p}");
        (p["ttft_ms"].as_f64().unwrap(), p["tpot_ms"].as_f64().unwrap())
    };
    let ((vllm_ttft, vllm_tpot), (sglang_ttft, sglang_tpot)) = (run("vllm"), run("sglang"));
    assert!(sglang_ttft > 1.5 * vllm_ttft, "p99 TTFT: SGLang's {sglang_ttft} ms, vLLM's {vllm_ttft} ms");
    assert!(sglang_tpot > vllm_tpot, "p99 TPOT: SGLang's {sglang_tpot} ms, vLLM's {vllm_tpot} ms");

    // Ten groups: eight run behind the router and stand for the ten, whose
    // load and completions the point gives, as vLLM's one group does.
    let ten = |engine: &str| {
        let load = ["--concurrency", "4", "--requests-per-user", "5", "--input-tokens", "256", "--output-tokens", "16"];
        let doc = plan("ten", "20", &load, engine);
        let p = &doc["configs"][0]["points"][0];
        (
            p["load"]["value"].as_u64().unwrap(),
            p["completed"].as_u64().unwrap(),
            p["output_tokens_per_s_per_gpu"].clone(),
        )
    };
    let (vllm, sglang) = (ten("vllm"), ten("sglang"));
    assert_eq!((vllm.0, vllm.1), (40, 200), "{vllm:?}");
    assert_eq!((sglang.0, sglang.1), (vllm.0, vllm.1), "{sglang:?}");
    let per_gpu = |v: &serde_json::Value| v.as_f64().unwrap();
    assert!((per_gpu(&sglang.2) / per_gpu(&vllm.2) - 1.0).abs() < 0.25, "{sglang:?} {vllm:?}");
}

/// SGLang computes a step of prompts alone, its running requests making no
/// token in it, unless started with `--enable-mixed-chunk` (which its
/// command leaves off): its configurations are predicted so, and say so
/// in their parameters (the grid's own prediction reads them), where
/// vLLM's mix. Prompts of 2,048 tokens at 64 users: SGLang's decodes
/// stall behind them, and its p99 TPOT is the longer, its output the less.
#[test]
fn sglangs_prompts_and_decodes_run_in_separate_steps() {
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str| {
        let out = dir.path().join(format!("{engine}.json"));
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "1", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--concurrency", "64"])
            .args(["--requests-per-user", "2", "--input-tokens", "2048", "--output-tokens", "64"])
            .args(["--percentile", "99", "--serve-engine", engine, "-o"])
            .arg(&out)
            .assert()
            .success();
        read_json(&out)["configs"][0].clone()
    };
    let (vllm, sglang) = (run("vllm"), run("sglang"));
    assert_eq!(vllm["params"].get("mixed_batches"), None, "{}", vllm["params"]);
    assert_eq!(sglang["params"]["mixed_batches"], "false", "{}", sglang["params"]);
    assert_eq!((vllm["params"].get("scheduler"), sglang["params"]["scheduler"].as_str()), (None, Some("sglang")));
    let said = |engine: &str| {
        let doc = read_json(&dir.path().join(format!("{engine}.json")));
        let notes = doc["notes"].as_array().unwrap().clone();
        notes
            .iter()
            .any(|n| n.as_str().unwrap().starts_with("SGLang's configurations ran SGLang's scheduler (scheduler"))
    };
    assert!(said("sglang") && !said("vllm"), "the note is SGLang's alone");
    let doc = read_json(&dir.path().join("sglang.json"));
    let notes = doc["notes"].to_string();
    assert!(notes.contains("each configuration's cap is SGLang's own default"), "no --max-num-seqs was given: {notes}");
    // That cap is SGLang's for this configuration's cache (half its tokens,
    // at most 2,048 to 4,096), not vLLM's default of 1,024, and the command
    // names it.
    use goodput_sim::engine::{EngineConfig, Precision, SchedulerPolicy};
    let mut cfg = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Fp8).unwrap();
    (cfg.scheduler, cfg.max_num_batched_tokens) = (SchedulerPolicy::Sglang, 2048);
    let own = cfg.resolved_max_num_seqs();
    assert!((2048..=4096).contains(&own), "{own}");
    assert_eq!(sglang["params"]["max_num_seqs"], own.to_string(), "{}", sglang["params"]);
    assert_eq!(vllm["params"]["max_num_seqs"], "1024", "{}", vllm["params"]);
    let command = sglang["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains(&format!("--max-running-requests {own} ")), "{command}");
    assert!(!command.contains("mixed"), "{command}");
    let (v, s) = (&vllm["points"][0], &sglang["points"][0]);
    let f = |p: &serde_json::Value, k: &str| p[k].as_f64().unwrap();
    assert!(f(s, "tpot_ms") > 1.05 * f(v, "tpot_ms"), "p99 TPOT: SGLang {s}, vLLM {v}");
    assert!(f(s, "output_tokens_per_s_per_gpu") < f(v, "output_tokens_per_s_per_gpu"), "SGLang {s}, vLLM {v}");
}

/// Under SGLang's DP attention (Qwen3-30B-A3B's experts over two ranks of
/// one GPU each) the cap the plan names is the group's: a rank's own
/// default times its two ranks, which SGLang's `--max-running-requests //
/// dp_size` gives back to each rank (naming a rank's had left each rank
/// half of SGLang's own); and the note says each rank runs its own
/// scheduler with the limits split.
#[test]
fn sglangs_dp_attention_cap_is_named_for_the_group() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    goodput()
        .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
        .args(["--ep", "2", "--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048"])
        .args(["--concurrency", "8", "--requests-per-user", "2", "--input-tokens", "512", "--output-tokens", "32"])
        .args(["--serve-engine", "sglang", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    // A mixture of experts: its throughput's error on the tables held out is said.
    let notes = doc["notes"].to_string();
    assert!(notes.contains("Qwen3-30B-A3B is a mixture of experts") && notes.contains("(45 rows"), "{notes}");
    let configs = doc["configs"].as_array().unwrap();
    let group = configs.iter().find(|c| c["params"]["ep"] == "2").unwrap_or_else(|| panic!("{doc}"));
    use goodput_sim::engine::{EngineConfig, Precision, SchedulerPolicy};
    let mut cfg = EngineConfig::from_names("qwen3-30b-a3b", "h100", Precision::Fp8).unwrap();
    (cfg.tp, cfg.ep, cfg.dp, cfg.scheduler, cfg.max_num_batched_tokens) = (1, 2, 2, SchedulerPolicy::Sglang, 2048);
    let rank = cfg.resolved_max_num_seqs();
    assert_eq!(group["params"]["max_num_seqs"], (2 * rank).to_string(), "{}", group["params"]);
    let command = group["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains(&format!("--max-running-requests {} ", 2 * rank)), "{command}");
    assert!(command.contains("--enable-dp-attention"), "{command}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("under DP attention each rank runs its own scheduler"), "{notes}");
}

/// vLLM router's power_of_two on live counts among four groups runs whole
/// too, and its note says so: a group at one user can be drawn a second
/// user, which an even split never gives, so the p99 TPOT at one user a
/// group rises above one group's alone, with the same requests a group.
#[test]
fn plan_runs_vllm_routers_power_of_two_whole_among_more_than_two_groups() {
    let dir = tempfile::tempdir().unwrap();
    let run = |gpus: &str| {
        let out = dir.path().join(format!("{gpus}.json"));
        goodput()
            .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2.5", "--gpus", gpus, "--tp", "1"])
            .args(["--ep", "2", "--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048"])
            .args(["--concurrency", "1", "--requests-per-user", "6", "--input-tokens", "256", "--output-tokens", "32"])
            .args(["--percentile", "99", "--serve-engine", "vllm", "-o"])
            .arg(&out)
            .assert()
            .success();
        let doc = read_json(&out);
        let whole = doc["notes"].as_array().unwrap().iter().any(|n| {
            n.as_str().is_some_and(|n| {
                n.starts_with("vLLM's router runs power-of-two on the requests in flight it counts")
                    && n.contains("The configurations behind it ran whole (up to 8 replicas or groups")
            })
        });
        let p = doc["configs"][0]["points"][0].clone();
        (whole, p)
    };
    let ((one_whole, one), (four_whole, four)) = (run("2"), run("8"));
    assert!(!one_whole && four_whole, "one group: {one_whole}, four: {four_whole}");
    assert_eq!((one["load"]["value"].as_u64(), four["load"]["value"].as_u64()), (Some(1), Some(4)));
    assert_eq!(four["completed"].as_u64().unwrap(), 4 * one["completed"].as_u64().unwrap(), "{four}");
    let tpot = |p: &serde_json::Value| p["tpot_ms"].as_f64().unwrap();
    assert!(tpot(&four) > 1.02 * tpot(&one), "p99 TPOT: four groups {four}, one {one}");
}

/// `--trace`: each configuration is simulated whole (its replicas behind
/// each router of `--router`), replaying the trace at each speed: every
/// point sends all of the trace's requests, at the trace's rate times the
/// speed, and its throughput per GPU is the whole's over all its GPUs.
#[test]
fn plan_replays_a_trace_against_whole_configurations_and_their_routers() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    // 60 requests over 5.9 s: 1,024-token prompts, the first 512 shared
    // by one of three conversations, 16 tokens out. (Of four, round-robin
    // over two replicas sends each conversation where prefix-aware does,
    // and the two curves are one: the later then shares the first's
    // points, a_budget_that_never_binds_shares_the_first_budget_s_points.)
    let lines: Vec<String> = (0..60)
        .map(|i| {
            format!(
                r#"{{"timestamp": {:.1}, "input_tokens": 1024, "output_tokens": 16, "prefix_id": {}, "prefix_tokens": 512}}"#,
                i as f64 * 0.1,
                i % 3
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let out = dir.path().join("plan.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
        .args(["--precision", "fp8", "--max-num-batched-tokens", "2048", "--jobs", "2", "--pp", "1", "--trace"])
        .arg(&trace)
        .args(["--trace-speed", "4,1,16", "--router", "round-robin,prefix-aware", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "plan failed: {}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --trace");
    assert_eq!(doc["workload"]["trace"]["requests"], 60, "{}", doc["workload"]);
    let configs = doc["configs"].as_array().unwrap();
    let routers: Vec<&str> = configs.iter().map(|c| c["params"]["router"].as_str().unwrap()).collect();
    assert_eq!(routers, ["round-robin", "prefix-aware"], "each router its own configuration");
    for c in configs {
        assert_eq!((c["status"].as_str(), c["gpus"].as_u64()), (Some("ok"), Some(2)), "{c}");
        assert!(c["id"].as_str().unwrap().ends_with(c["params"]["router"].as_str().unwrap()), "{}", c["id"]);
        let points = c["points"].as_array().unwrap();
        assert!(!points.is_empty(), "{c}");
        for (p, speed) in points.iter().zip([1.0, 4.0, 16.0]) {
            // The speeds rising, whatever order they were given in; the
            // offered rate is 60 requests over 5.9 s times the speed.
            assert_eq!(p["load"]["kind"], "rate", "{p}");
            let rate = p["load"]["value"].as_f64().unwrap();
            assert!((rate - 60.0 / 5.9 * speed).abs() < 1e-9, "{rate} at speed {speed}");
            // The whole configuration served the whole trace.
            assert_eq!(p["completed"].as_u64().unwrap() + p["failed"].as_u64().unwrap(), 60, "{p}");
            let per_gpu = p["output_tokens_per_s_per_gpu"].as_f64().unwrap();
            assert!((per_gpu * 2.0 - p["output_tokens_per_s"].as_f64().unwrap()).abs() < 1e-6, "{p}");
        }
    }
    // Disaggregated, a configuration's units are one prefill and one decode
    // pool, each routing to its least-loaded instance: no router of its own.
    let out = dir.path().join("pd.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
        .args(["--precision", "fp8", "--max-num-batched-tokens", "2048", "--jobs", "2", "--trace"])
        .arg(&trace)
        .args(["--trace-speed", "1,4", "--router", "round-robin,prefix-aware", "--pd", "1:1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "plan failed: {}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    let pd: Vec<&Value> = doc["configs"].as_array().unwrap().iter().filter(|c| c["params"]["pd"] == "1:1").collect();
    assert_eq!(pd.len(), 1, "{}", doc["configs"]);
    assert!(pd[0]["params"].get("router").is_none() && pd[0]["gpus"] == 2, "{}", pd[0]);
    for p in pd[0]["points"].as_array().unwrap() {
        assert_eq!(p["completed"].as_u64().unwrap() + p["failed"].as_u64().unwrap(), 60, "{p}");
    }
    // Pools of expert-parallel groups: one unit of a prefill and a decode
    // instance of two ranks each is four GPUs, and what the replay
    // simulates draws four GPUs' provisioned power (tokens/s per MW ×
    // 4 × 700 W is the output rate), not a unit's instances per rank.
    let out = dir.path().join("pd-ep.json");
    goodput()
        .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2.5", "--gpus", "4", "--tp", "1", "--ep", "2"])
        .args(["--precision", "bf16", "--max-num-batched-tokens", "2048", "--jobs", "2", "--trace"])
        .arg(&trace)
        .args(["--trace-speed", "1", "--pd", "1:1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let pd: Vec<&Value> = doc["configs"].as_array().unwrap().iter().filter(|c| c["params"]["pd"] == "1:1").collect();
    assert_eq!((pd.len(), pd[0]["gpus"].as_u64()), (1, Some(4)), "{}", doc["configs"]);
    let p = &pd[0]["points"][0];
    let (out_rate, per_mw) =
        (p["output_tokens_per_s"].as_f64().unwrap(), p["output_tokens_per_s_per_mw"].as_f64().unwrap());
    assert!((per_mw * 4.0 * 700.0 / 1e6 - out_rate).abs() < 1e-6 * out_rate, "{per_mw} per MW, {out_rate} tok/s");
    // Closed loops of users are not a trace's load.
    let err = goodput().args(["plan", "--gpu", "h100", "--concurrency", "1,2", "--trace"]).arg(&trace).refusal();
    assert!(err.contains("--concurrency") && err.contains("--trace-speed"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--trace-speed", "0,1", "--trace"]).arg(&trace).refusal();
    assert!(err.contains("positive"), "{err}");
    // A speed that slows the trace past the clock's horizon is refused up
    // front (1e-300 had panicked converting the stretched times), and so is
    // a trace of one instant, which every speed replays alike (its offered
    // rate had been written as null, which report then refused).
    let err = goodput().args(["plan", "--gpu", "h100", "--trace-speed", "1e-300,1", "--trace"]).arg(&trace).refusal();
    assert!(err.contains("--trace-speed 1e-300") && err.contains("more than 100 years"), "{err}");
    let instant = dir.path().join("instant.jsonl");
    std::fs::write(&instant, "{\"timestamp\":0,\"input_tokens\":100,\"output_tokens\":10}\n".repeat(3)).unwrap();
    let err = goodput().args(["plan", "--gpu", "h100", "--trace"]).arg(&instant).refusal();
    assert!(err.contains("3 request(s) all come at the same instant"), "{err}");
}

/// A model one GPU cannot hold is disaggregated over pipeline-parallel
/// instances: each pool's instance gets every depth of `--pp` that holds it;
/// a mixture of experts over instances that are expert-parallel groups.
#[test]
fn plan_gives_disaggregated_instances_the_stages_that_hold_the_model() {
    let dir = tempfile::tempdir().unwrap();
    // The disaggregated configurations `plan --pd 1:1` finds for `model`
    // on `gpus` H100s with TP 1 and `extra`.
    let pd_configs = |model: &str, gpus: &str, extra: &[&str]| -> Vec<Value> {
        let out = dir.path().join(format!("{model}.json"));
        goodput()
            .args(["plan", "-q", "--model", model, "--gpus", gpus, "--gpu", "h100=2", "--tp", "1", "--pd", "1:1"])
            .args(extra)
            .args(["--precision", "bf16", "--max-num-batched-tokens", "8192", "--input-tokens", "500"])
            .args(["--output-tokens", "50", "--concurrency", "1,4", "--requests-per-user", "2", "--jobs", "2", "-o"])
            .arg(&out)
            .assert()
            .success();
        let doc = read_json(&out);
        assert_valid(&doc, "FrontierResult", "plan --pd");
        let pd: Vec<Value> =
            doc["configs"].as_array().unwrap().iter().filter(|c| c["params"]["pd"].is_string()).cloned().collect();
        pd
    };
    // 140 GB of weights: two stages of one H100 an instance, two units of
    // one prefill and one decode instance, eight GPUs; and four stages, one
    // unit, as two leave the decode instance a cache for few requests.
    let cs = pd_configs("llama-3.1-70b", "8", &["--pp", "1,2,4"]);
    assert_eq!(cs.len(), 2, "{cs:?}");
    let p = &cs[0]["params"];
    assert_eq!((p["pp"].as_str(), p["dp"].as_str(), cs[0]["gpus"].as_u64()), (Some("2"), Some("2"), Some(8)));
    // Four GPUs a pool: two instances of two stages on one GPU each.
    assert_eq!(cs[0]["id"], "h100-sxm 4P+4D tp1 pp2 bf16 mbt8192");
    let p = &cs[1]["params"];
    assert_eq!((p["pp"].as_str(), p["dp"].as_str(), cs[1]["gpus"].as_u64()), (Some("4"), Some("1"), Some(8)));
    // A mixture of experts: one unit of a prefill and a decode instance,
    // each an expert-parallel group of two ranks of one GPU.
    let cs = pd_configs("qwen3-30b-a3b", "4", &["--ep", "2"]);
    assert_eq!(cs.len(), 1, "{cs:?}");
    let c = &cs[0];
    let p = &c["params"];
    assert_eq!((p["ep"].as_str(), c["gpus"].as_u64(), c["status"].as_str()), (Some("2"), Some(4), Some("ok")));
}

/// `--pd`: the ratios given are searched beside colocated serving, each
/// configuration counting both pools' GPUs; a ratio far from the
/// workload's prefill:decode balance is left out with the reason; a ratio
/// that is not P:D is refused.
#[test]
fn plan_searches_disaggregation_ratios_and_prunes_the_unbalanced() {
    let dir = tempfile::tempdir().unwrap();
    let doc = plan_8b_pd(dir.path(), "4", "1", "auto");
    let configs = doc["configs"].as_array().unwrap();
    let pd: Vec<&Value> = configs.iter().filter(|c| c["params"]["pd"] == "1:1").collect();
    assert_eq!(pd.len(), 1, "{configs:?}");
    assert!(!configs.iter().any(|c| c["params"]["pd"] == "1:4"), "{configs:?}");
    // Two units of one prefill and one decode instance: four GPUs.
    assert_eq!((pd[0]["params"]["pd"].as_str(), pd[0]["params"]["dp"].as_str()), (Some("1:1"), Some("2")));
    assert_eq!(pd[0]["gpus"].as_u64(), Some(4));
    // Named in GPUs: two prefill GPUs and two decode GPUs over the units.
    assert_eq!(pd[0]["id"], "h100-sxm 2P+2D tp1 bf16 mbt8192");
    assert!(configs.iter().any(|c| c["params"]["pd"].is_null() && c["gpus"].as_u64() == Some(4)));
    // A 2,000-token prompt's prefill outweighs its share of a decode
    // instance: four decode instances to one prefill would mostly wait.
    let notes = doc["notes"].to_string();
    assert!(notes.contains("--pd 1:4 left out") && notes.contains("decode pool would idle"), "{notes}");
    // A ratio named in the list is the user's: simulated, with a note that
    // it is out of balance (it had been dropped, with no way to run it).
    let doc = plan_8b_pd(dir.path(), "5", "1", "1:1,1:4");
    let configs = doc["configs"].as_array().unwrap();
    let named: Vec<&str> = configs.iter().filter_map(|c| c["params"]["pd"].as_str()).collect();
    assert_eq!(named, ["1:1", "1:4"], "{configs:?}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("--pd 1:4 is simulated as named, though out of balance"), "{notes}");
    assert!(notes.contains("decode pool idles"), "{notes}");
    // A unit of 2:2 holds the GPUs of two units of 1:1, but routes among
    // its instances: another configuration, its ratio in its name.
    let doc = plan_8b_pd(dir.path(), "4", "1", "1:1,2:2");
    let ids: Vec<&str> = doc["configs"].as_array().unwrap().iter().filter_map(|c| c["id"].as_str()).collect();
    assert!(ids.contains(&"h100-sxm 2P+2D tp1 bf16 mbt8192"), "{ids:?}");
    assert!(ids.contains(&"h100-sxm 2P+2D tp1 bf16 mbt8192 pd2:2"), "{ids:?}");
    let err = goodput().args(["plan", "--gpu", "h100", "--pd", "1-1"]).refusal();
    assert!(err.contains("P:D"), "{err}");
}

/// `plan -q` with `--pd pd` and `args` (BF16, an 8,192-token budget, two
/// requests a user, two threads): its document, checked against the schema.
fn plan_pd(dir: &std::path::Path, args: &[&str], pd: &str) -> Value {
    let out = dir.join("plan-pd.json");
    goodput()
        .args(["plan", "-q", "--precision", "bf16", "--max-num-batched-tokens", "8192", "--pd", pd])
        .args(["--requests-per-user", "2", "--jobs", "2"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", &format!("plan --pd {pd}"));
    doc
}

/// `plan` of Llama-3.1-8B on `gpus` H100s at TP `tp` with `--pd pd`
/// (2,000-token prompts and 200-token answers, 1 and 8 users).
fn plan_8b_pd(dir: &std::path::Path, gpus: &str, tp: &str, pd: &str) -> Value {
    let model = ["--model", "llama-3.1-8b", "--gpus", gpus, "--gpu", "h100=2", "--tp", tp, "--pp", "1"];
    let load = ["--input-tokens", "2000", "--output-tokens", "200", "--concurrency", "1,8"];
    plan_pd(dir, &[&model[..], &load[..]].concat(), pd)
}

/// `--pd` with a pool's own TP: searched as given (never pruned), at the
/// prefill TP it names only (listed by `--tp` or not), each configuration counting both pools' GPUs,
/// named so that `--pd` takes it back.
#[test]
fn plan_searches_pools_of_their_own_tp() {
    let dir = tempfile::tempdir().unwrap();
    let doc = plan_8b_pd(dir.path(), "8", "1,2", "2xTP1:1xTP4,1:4xTP2");
    let configs = doc["configs"].as_array().unwrap();
    let pools = |spec: &str| -> Vec<&Value> { configs.iter().filter(|c| c["params"]["pd"] == spec).collect() };
    // 2 × TP1 + 1 × TP4: six GPUs a unit, one unit in eight; only at TP 1.
    let a = pools("2:1xTP4");
    assert_eq!(a.len(), 1, "{configs:?}");
    assert_eq!((a[0]["params"]["tp"].as_str(), a[0]["params"]["dp"].as_str()), (Some("1"), Some("1")));
    assert_eq!(a[0]["gpus"].as_u64(), Some(6));
    // Two prefill GPUs (two instances of one) and four decode GPUs (one
    // instance of four).
    assert_eq!(a[0]["id"], "h100-sxm 2P+4D tp1+tp4 bf16 mbt8192");
    // Its two prefill instances picked as its script's router picks them
    // (cache_aware, both routers' default, which the script names), and
    // predicted so.
    assert_eq!(a[0]["params"]["router"], "prefix-aware", "{}", a[0]);
    // 1:4xTP2, unbalanced for this workload but named: at TP 1 (1 + 8 GPUs
    // is over the budget) nothing; at TP 2 the decode pool's TP is the
    // prefill pool's, so it is the plain 1:4 of TP 2 (10 GPUs): over too.
    assert!(pools("1:4xTP2").is_empty() && pools("1:4").is_empty(), "{configs:?}");
    let notes = doc["notes"].to_string();
    assert!(!notes.contains("2:1xTP4 left out"), "{notes}");
    // `auto` tries each ratio with its decode pool on each TP of the list
    // too: every unit within the budget, both pools' GPUs counted, and no
    // decode TP named that equals the prefill pool's (the plain ratio).
    let doc = plan_8b_pd(dir.path(), "4", "1,2", "auto");
    let mut own = 0;
    for c in doc["configs"].as_array().unwrap() {
        let Some(spec) = c["params"]["pd"].as_str() else { continue };
        let pd = goodput_sim::engine::Disaggregation::parse(spec).unwrap();
        let tp: u32 = c["params"]["tp"].as_str().unwrap().parse().unwrap();
        let dp: u64 = c["params"]["dp"].as_str().unwrap().parse().unwrap();
        let decode_tp = pd.decode_tp.unwrap_or(tp);
        assert!(pd.decode_tp != Some(tp), "{spec} at TP {tp}");
        let unit = u64::from(pd.prefill * tp + pd.decode * decode_tp);
        assert_eq!(c["gpus"].as_u64(), Some(dp * unit), "{}", c["id"]);
        assert!(dp * unit <= 4, "{}", c["id"]);
        own += usize::from(pd.decode_tp.is_some());
    }
    assert!(own > 0, "{:?}", doc["configs"]);
    // A prefill TP that --tp does not list is searched all the same.
    let doc = plan_8b_pd(dir.path(), "8", "2", "2xTP1:1xTP4");
    let named: Vec<&Value> =
        doc["configs"].as_array().unwrap().iter().filter(|c| c["params"]["pd"] == "2:1xTP4").collect();
    assert_eq!(named.len(), 1, "{:?}", doc["configs"]);
    assert_eq!(named[0]["params"]["tp"], "1", "{}", named[0]);
}

/// `plan` of Qwen3-30B-A3B (128 experts) on eight H100s at TP 1 with
/// `--ep eps` and `--pd pd` (500-token prompts, 50-token answers, 1 and 4
/// users).
fn plan_moe_pd(dir: &std::path::Path, eps: &str, pd: &str) -> Value {
    let model = ["--model", "qwen3-30b-a3b", "--gpus", "8", "--gpu", "h100=2.5", "--tp", "1", "--ep", eps];
    let load = ["--input-tokens", "500", "--output-tokens", "50", "--concurrency", "1,4"];
    plan_pd(dir, &[&model[..], &load[..]].concat(), pd)
}

/// `--pd` with a pool's own EP: searched at the prefill EP it names only,
/// each pool counting its own ranks' GPUs, and its decode
/// pool decoding as a decode pool of that EP does; `auto` tries each
/// ratio's decode pool on each wider EP of the list; an EP the model cannot take
/// is refused.
#[test]
fn plan_searches_pools_of_their_own_ep() {
    let dir = tempfile::tempdir().unwrap();
    let doc = plan_moe_pd(dir.path(), "2,4", "1:1,1xEP2:1xEP4");
    let configs = doc["configs"].as_array().unwrap();
    let find = |spec: &str, ep: &str| -> &Value {
        let hit: Vec<&Value> =
            configs.iter().filter(|c| c["params"]["pd"] == spec && c["params"]["ep"] == ep).collect();
        assert_eq!(hit.len(), 1, "pd {spec} at EP {ep} in {configs:?}");
        hit[0]
    };
    // A prefill instance of two ranks and a decode instance of four: six
    // GPUs a unit, one unit in eight, at EP 2 only.
    let own = find("1:1xEP4", "2");
    assert_eq!((own["gpus"].as_u64(), own["status"].as_str()), (Some(6), Some("ok")), "{own}");
    assert_eq!(own["id"], "h100-sxm 2P+4D tp1 ep2+ep4 bf16 mbt8192");
    // Both pools at EP 4: eight GPUs. Its decode pool is the other's, so
    // one user's decode speed is the same; the prefill pools differ.
    let wide = find("1:1", "4");
    assert_eq!(wide["gpus"].as_u64(), Some(8), "{wide}");
    let speed = |c: &Value| c["points"][0]["tokens_per_s_per_user"].as_f64().unwrap();
    let (a, b) = (speed(own), speed(wide));
    assert!(
        (a / b - 1.0).abs() < 0.01,
        "one user: {a} tok/s (decode EP 4 beside prefill EP 2) against {b} (both EP 4)"
    );
    // `auto` with --ep 2,4: ratios whose decode pool runs on the wider EP
    // too, every unit within budget.
    let doc = plan_moe_pd(dir.path(), "2,4", "auto");
    let mut own = 0;
    for c in doc["configs"].as_array().unwrap() {
        let Some(spec) = c["params"]["pd"].as_str() else { continue };
        let pd = goodput_sim::engine::Disaggregation::parse(spec).unwrap();
        let ep: u32 = c["params"]["ep"].as_str().unwrap().parse().unwrap();
        let dp: u32 = c["params"]["dp"].as_str().unwrap().parse().unwrap();
        // A wider decode group only, and no decode TP of its own beside EP.
        assert!(pd.decode_ep.is_none_or(|d| d > ep) && pd.decode_tp.is_none(), "{spec} at EP {ep}");
        // TP 1: an instance is as many GPUs as its EP; dp counts the
        // units' prefill ranks.
        let unit = pd.prefill * ep + pd.decode * pd.decode_ep.unwrap_or(ep);
        assert_eq!(c["gpus"].as_u64(), Some(u64::from(dp / ep * unit)), "{}", c["id"]);
        assert!(dp / ep * unit <= 8, "{}", c["id"]);
        own += usize::from(pd.decode_ep.is_some());
    }
    assert!(own > 0, "{:?}", doc["configs"]);
    // A pool's EP the model cannot take.
    let err = goodput().args(["plan", "--gpu", "h100", "--model", "llama-3.1-8b", "--pd", "1:1xEP4"]).refusal();
    assert!(err.contains("dense") && err.contains("decode pool EP 4"), "{err}");
    let err = goodput().args(["plan", "--gpu", "h100", "--model", "qwen3-30b-a3b", "--pd", "1xEP3:1"]).refusal();
    assert!(err.contains("128 experts") && err.contains("prefill pool EP 3"), "{err}");
}

/// A point's users join over one request's time, so they send at times of
/// their own rather than in the waves users started together keep: the
/// same point with `--ramp-up 0s` (together) has a far longer TTFT. Its
/// output tokens/s, counted while every user is in the loop, does not
/// move with the requests each user sends (counted over the run's window,
/// the part-loaded edges would weigh less as the run grows).
#[test]
fn a_point_s_users_start_apart_unless_a_ramp_up_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let one = |name: &str, per_user: &str, extra: &[&str]| -> Value {
        let out = dir.path().join(name);
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--tp", "1"])
            .args(["--precision", "bf16", "--max-num-batched-tokens", "8192", "--max-num-seqs", "64"])
            .args(["--input-tokens", "1024", "--output-tokens", "64", "--concurrency", "32"])
            .args(["--requests-per-user", per_user, "--percentile", "50", "-o"])
            .arg(&out)
            .args(extra)
            .assert()
            .success();
        let doc = read_json(&out);
        doc["configs"][0]["points"][0].clone()
    };
    let (apart, together) = (one("apart.json", "4", &[]), one("together.json", "4", &["--ramp-up", "0s"]));
    let f = |p: &Value, k: &str| p[k].as_f64().unwrap();
    let (ttft_apart, ttft_together) = (f(&apart, "ttft_ms"), f(&together, "ttft_ms"));
    // Together, 32 prompts of 1,024 tokens prefill in four steps of 8,192
    // every cycle; apart, a prompt seldom waits for more than one other.
    assert!(ttft_apart < 0.5 * ttft_together, "TTFT p50 {ttft_apart:.1} ms apart, {ttft_together:.1} together");
    // Output tokens/s per provisioned megawatt is the same rate (one H100
    // of 700 W).
    let per_mw = f(&apart, "output_tokens_per_s_per_mw");
    let rate = f(&apart, "output_tokens_per_s");
    assert!((per_mw * 700.0 / 1e6 - rate).abs() < 1e-6 * rate, "{per_mw} per MW, {rate} tokens/s");
    let longer = one("apart16.json", "16", &[]);
    let (short, long) = (f(&apart, "output_tokens_per_s"), f(&longer, "output_tokens_per_s"));
    assert!((short / long - 1.0).abs() < 0.02, "{short:.0} tokens/s at 4 requests a user, {long:.0} at 16");
}

/// A plan of multi-turn sessions (`--turns`): the replicas run together
/// behind each router, and prefix-aware, which sends a later turn where
/// its history is cached, beats round-robin, which spreads a session over
/// both caches; the document keeps the sessions (valid against the
/// schema), and the grid's sweep measures them. Users who think between
/// turns climb past the batch limit, and each limit is simulated. What
/// plan cannot apply is refused.
#[test]
fn plan_runs_sessions_whole_behind_their_routers_and_past_the_limit_while_users_think() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--tp", "1", "--pp", "1"];
    let run = |name: &str, extra: &[&str]| -> Value {
        let out = dir.path().join(name);
        goodput()
            .args(base)
            .args(["--precision", "fp8", "--max-num-batched-tokens", "8192", "--turns", "4"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    // Two replicas, prompts whose history is most of each later turn.
    let grid = dir.path().join("grid.toml");
    let doc = run(
        "routers.json",
        &[
            "--gpus",
            "2",
            "--input-tokens",
            "2000",
            "--output-tokens",
            "64",
            "--think-time",
            "0s",
            "--concurrency",
            "32",
            "--requests-per-user",
            "8",
            "--router",
            "round-robin,prefix-aware",
            "--grid-out",
            grid.to_str().unwrap(),
        ],
    );
    assert_valid(&doc, "FrontierResult", "plan --turns");
    assert_eq!(doc["sessions"]["turns"], "4", "{}", doc["sessions"]);
    assert_eq!(doc["sessions"]["think_time"], "0s", "{}", doc["sessions"]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("sessions: each user holds one conversation of --turns 4"), "{notes}");
    let point = |router: &str| -> Value {
        let c = doc["configs"].as_array().unwrap().iter().find(|c| c["id"].as_str().unwrap().ends_with(router));
        let c = c.unwrap_or_else(|| panic!("no {router} configuration: {}", doc["configs"]));
        assert_eq!(c["status"], "ok", "{c}");
        c["points"][0].clone()
    };
    let (rr, pa) = (point("round-robin"), point("prefix-aware"));
    // The whole configuration's users: 32 a replica, through the router.
    assert_eq!(rr["load"]["value"], 64, "{rr}");
    let tok = |p: &Value| p["output_tokens_per_s_per_gpu"].as_f64().unwrap();
    // Round-robin's later turns land on the other replica half the time,
    // and prefill their history again. (Not TTFT: prefix-aware keeps a
    // session where it began, and its replicas' loads part.)
    assert!(tok(&pa) > 1.05 * tok(&rr), "prefix-aware {:.0} tok/s/GPU, round-robin {:.0}", tok(&pa), tok(&rr));
    // Each point says what the caches served: more behind prefix-aware.
    let hits = |p: &Value| p["prefix_cache_hit_rate"].as_f64().unwrap();
    assert!(hits(&pa) > hits(&rr) && hits(&pa) < 1.0 && hits(&rr) > 0.0, "{} {}", hits(&pa), hits(&rr));
    let written = std::fs::read_to_string(&grid).unwrap();
    assert!(written.contains("--turns 4 --think-time 0s"), "{written}");
    // Users who think: the curve climbs past a limit of 8 (each limit its
    // own curve), and ends by itself.
    let doc = run(
        "thinking.json",
        &[
            "--gpus",
            "1",
            "--input-tokens",
            "200",
            "--output-tokens",
            "32",
            "--think-time",
            "1s",
            "--max-num-seqs",
            "4,8",
            "--requests-per-user",
            "4",
        ],
    );
    let configs = doc["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2, "{}", doc["configs"]);
    for c in configs {
        assert!(c["points_of"].is_null(), "each limit simulated: {c}");
        let limit: f64 = c["params"]["max_num_seqs"].as_str().unwrap().parse().unwrap();
        let loads: Vec<f64> =
            c["points"].as_array().unwrap().iter().map(|p| p["load"]["value"].as_f64().unwrap()).collect();
        let last = *loads.last().unwrap();
        assert!(last > limit && last <= 64.0 * limit, "{} loads {loads:?}", c["id"]);
        let rates: Vec<f64> = c["points"].as_array().unwrap().iter().map(tok).collect();
        // Past the limit more users still served more, until it saturated.
        let at_limit = loads.iter().position(|&l| l == limit).unwrap();
        assert!(rates[at_limit + 1] > 1.1 * rates[at_limit], "{} rates {rates:?} at {loads:?}", c["id"]);
    }
    // Disaggregated units run as one pair of pools: 8 users a unit, two units.
    let doc = run(
        "pd.json",
        &["--gpus", "4", "--pd", "1:1", "--input-tokens", "512", "--output-tokens", "32", "--concurrency", "8"],
    );
    let c = &doc["configs"].as_array().unwrap().iter().find(|c| c["params"]["pd"].is_string()).unwrap();
    assert_eq!(c["status"], "ok", "{c}");
    assert_eq!(c["points"][0]["load"]["value"], 16, "{c}");
    assert!(doc["notes"].to_string().contains("disaggregated units ran as one prefill pool"), "{}", doc["notes"]);
    // A conversation's last turn that no replica's cache holds leaves the
    // configuration out, the turns named (its first turn alone had been
    // checked, and every session failed at its later turns).
    let err = goodput()
        .args(base)
        .args(["--gpus", "1", "--precision", "bf16", "--input-tokens", "1500", "--output-tokens", "500"])
        .args(["--turns", "30", "--gpu-memory-utilization", "0.3", "--concurrency", "1"])
        .refusal();
    assert!(err.contains("in sessions of 30 turns (its last turn") && err.contains("fewer turns"), "{err}");
    // Refused: sessions over a trace, a router for closed loops of single
    // requests, and --cancel-rate.
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, "{\"timestamp\": 0, \"input_tokens\": 8, \"output_tokens\": 4}\n").unwrap();
    let err = goodput().args(base).args(["--turns", "3", "--trace"]).arg(&trace).refusal();
    assert!(err.contains("--trace replays single requests") && err.contains("drop --turns"), "{err}");
    let err = goodput().args(base).args(["--gpus", "2", "--router", "prefix-aware"]).refusal();
    assert!(err.contains("add --trace or --turns, or drop --router"), "{err}");
    let err = goodput().args(base).args(["--cancel-rate", "0.1", "--cancel-after", "1s"]).refusal();
    assert!(err.contains("--cancel-rate belongs to bench"), "{err}");
    // Sessions no workload can ask: refused once, before the search (they
    // had failed every configuration, one by one).
    let err = goodput().args(base).args(["--turns", "all"]).refusal();
    assert!(err.contains("synthetic questions need a count") && !err.contains("no configuration"), "{err}");
    let lone = dir.path().join("lone.jsonl");
    std::fs::write(&lone, "{\"prompt\": \"hello there\"}\n").unwrap();
    let err = goodput().args(base).args(["--turns", "2", "--dataset"]).arg(&lone).refusal();
    assert!(err.contains("no conversation of more than one question") && !err.contains("no configuration"), "{err}");
}

/// Stages, expert-parallel groups or an EP that no configuration within
/// the budget can take: the refusal names the flag and its fix (it had
/// said "no configuration is left to simulate:" and nothing more).
#[test]
fn plan_names_the_flag_that_left_no_configuration() {
    let refused = |extra: &[&str]| {
        let o = goodput().args(["plan", "-q", "--gpu", "h100=2.5"]).args(extra).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("no configuration is left to simulate:"), "{extra:?}: {err}");
        // No empty reason: every line after the first says something.
        assert!(err.lines().skip(1).all(|l| !l.trim().is_empty()) && err.lines().count() >= 2, "{extra:?}: {err}");
        err
    };
    let err = refused(&["--pp", "64"]);
    assert!(
        err.contains(
            "--pp 64 needs 64 GPUs a replica (at TP 1), over the budget of 8 (--gpus): lower --pp or raise --gpus"
        ),
        "{err}"
    );
    let moe = ["--model", "qwen3-30b-a3b"];
    let err = refused(&[&moe[..], &["--ep", "16"]].concat());
    assert!(
        err.contains("--ep 16 needs 16 GPUs an expert-parallel group, over the budget of 8 (--gpus): lower --ep"),
        "{err}"
    );
    let err = refused(&[&moe[..], &["--ep", "3"]].concat());
    assert!(err.contains("--ep 3 does not divide Qwen3-30B-A3B's 128 experts; EP 3 left out"), "{err}");
    let err = refused(&[&moe[..], &["--ep", "2", "--tp", "4,8"]].concat());
    assert!(err.contains("--ep 2 is a multiple of no --tp within the budget (4, 8)"), "{err}");
}

/// `report` on a frontier: `--fail-on-slo` fails it with a run's code (3)
/// when no point met its SLO (it had exited 0), and the flags it cannot
/// apply to a frontier are refused with the fix, not ignored.
#[test]
fn report_fails_a_frontier_that_missed_its_slo_and_refuses_what_it_cannot_apply() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1", "--tp", "1"])
            .args(["--precision", "bf16", "--max-num-batched-tokens", "2048", "--input-tokens", "64"])
            .args(["--output-tokens", "8", "--concurrency", "1,4", "--requests-per-user", "2", "-o"])
            .arg(&out)
            .args(extra)
            .assert()
            .success();
        out
    };
    let missed = frontier("missed.json", &["--slo", "tpot<=0.01ms"]);
    let met = frontier("met.json", &["--slo", "tpot<=1s"]);
    let unjudged = frontier("unjudged.json", &[]);
    assert!(read_json(&missed)["best"].is_null() && !read_json(&met)["best"].is_null());
    let report = |doc: &Path, extra: &[&str]| goodput().arg("report").arg(doc).args(extra).output().unwrap();
    let o = report(&missed, &["--fail-on-slo"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("the frontier has no best point (--fail-on-slo): no point met the SLO"), "{err}");
    // The frontier is rendered all the same.
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("h100-sxm tp1x1 bf16"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(report(&met, &["--fail-on-slo"]).status.success());
    let o = report(&unjudged, &["--fail-on-slo"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--fail-on-slo needs an SLO") && err.contains("run goodput plan again with --slo"), "{err}");
    for (flags, says) in [
        (&["--fail-on-unsteady"][..], "drop --fail-on-unsteady"),
        (&["--gpus", "2"], "so --gpus 2 sets nothing: drop --gpus"),
        (
            &["--records", "r.jsonl"],
            "its points keep no per-request records for --records to re-analyse; drop --records",
        ),
        (&["--attainment", "0.5"], "again with the new SLO"),
        (&["--price", "h100"], "prices or --config"),
    ] {
        let o = report(&met, flags);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {err}");
        assert!(err.contains("is a frontier") && err.contains(says), "{flags:?}: {err}");
    }
    // `-o x.md` on a frontier: named JSON, and not sent to --markdown,
    // which a frontier refuses (it had been, the name checked before the
    // document was read).
    let md = dir.path().join("x.md");
    let o = report(&met, &["-o", md.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not Markdown") && err.contains("(report on a frontier writes no Markdown)"), "{err}");
    assert!(!err.contains("--markdown") && !md.exists(), "{err}");
}

#[test]
fn the_context_check_counts_the_chat_template_and_says_so() {
    // 50 + 20 tokens fit a context of 100, but the chat template's tokens
    // come on top: plan had passed the check, then every configuration
    // failed with "85 prompt" and no word of where 35 came from.
    let dir = tempfile::tempdir().unwrap();
    let model = model_config(
        dir.path(),
        r#"{"num_hidden_layers":2,"hidden_size":256,"num_attention_heads":4,"num_key_value_heads":2,
            "intermediate_size":512,"vocab_size":128256,"max_position_embeddings":100}"#,
    );
    let lengths = ["--input-tokens", "50", "--output-tokens", "20"];
    let err = goodput().args(["plan", "-q", "--gpu", "h100", "--model"]).arg(&model).args(lengths).refusal();
    // plan takes no --chat-template: its fix names --api completions alone
    // (it had suggested --chat-template none, which plan then refused).
    assert!(err.contains("chat template adds") && err.contains("(--api completions leaves them out)"), "{err}");
    assert!(!err.contains("--chat-template"), "{err}");
    let err = goodput().args(["estimate", "-n", "2", "--model"]).arg(&model).args(lengths).refusal();
    assert!(err.contains("chat template adds") && err.contains("--chat-template none"), "{err}");
    // Without the template the same lengths run (a raw prompt adds its BOS).
    let out = goodput()
        .args(["estimate", "-q", "-n", "2", "--api", "completions", "--model"])
        .arg(&model)
        .args(lengths)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn every_pipeline_depth_that_fits_is_simulated() {
    // Llama-3.1-70B in BF16 on 8 H100s at TP 1: two stages hold the
    // weights and leave a cache for few requests; four stages had been left
    // out as "no speed", and were the best per dollar.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pp.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-70b", "--gpu", "h100", "--gpus", "8", "--tp", "1"])
        .args(["--precision", "bf16", "--concurrency", "1,2", "--requests-per-user", "4", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let mut stages: Vec<&str> =
        doc["configs"].as_array().unwrap().iter().filter_map(|c| c["params"]["pp"].as_str()).collect();
    stages.sort_unstable();
    stages.dedup();
    assert_eq!(stages, ["2", "4", "8"], "{doc}");
}

#[test]
fn a_tp_that_slows_one_user_is_still_simulated() {
    // Qwen3-30B-A3B in FP8 on H100s: TP 2 makes one user slower than TP 1.
    // The search had stopped its climb there and left TP 4 out, which at
    // many users carries more tokens a GPU than TP 2 (the probe's plan of 8
    // GPUs had TP 4 on the frontier).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.json");
    goodput()
        .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "4", "--tp", "1,2,4"])
        .args(["--precision", "fp8", "--concurrency", "1,2", "--requests-per-user", "4", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let speed = |tp: &str| {
        let c = doc["configs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| {
                c["params"]["tp"] == tp && c["params"]["max_num_seqs"] == doc["configs"][0]["params"]["max_num_seqs"]
            })
            .unwrap_or_else(|| panic!("TP {tp} simulated: {doc}"));
        c["points"][0]["tokens_per_s_per_user"].as_f64().unwrap()
    };
    assert!(speed("2") < speed("1"), "the case: TP 2 is slower for one user than TP 1");
    assert!(speed("4") > 0.0);
    let notes: Vec<&str> = doc["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect();
    assert!(!notes.iter().any(|n| n.contains("left out") && n.contains("TP 4")), "{notes:#?}");
}

#[test]
fn a_layout_left_out_gives_its_own_reason_not_that_of_more_stages_than_layers() {
    // One layer whose KV block is larger than any GPU: the plan had said
    // "--pp 8 exceeds its 1 layers", the last of the stages it tried, and
    // lost the reason and its fix.
    let dir = tempfile::tempdir().unwrap();
    let model = model_config(
        dir.path(),
        r#"{"num_hidden_layers":1,"hidden_size":1,"num_attention_heads":65536,"num_key_value_heads":65536,
            "head_dim":65536,"intermediate_size":1,"vocab_size":1}"#,
    );
    let err = goodput()
        .args(["plan", "-q", "--gpu", "h100", "--precision", "fp8", "--tp", "1", "--model"])
        .arg(&model)
        .refusal();
    assert!(err.contains("one KV-cache block of 16 tokens takes") && err.contains("--block-size"), "{err}");
    assert!(!err.contains("exceeds"), "{err}");
}

/// A model's config.json of `json` in `dir`: its path.
fn model_config(dir: &Path, json: &str) -> std::path::PathBuf {
    let path = dir.join("config.json");
    std::fs::write(&path, json).unwrap();
    path
}

#[test]
fn precision_auto_runs_the_checkpoint_s_width() {
    // A config.json published in FP8: `estimate` runs it in FP8 unless
    // --precision says otherwise, and on an A100 (no FP8 tensor cores) as
    // vLLM runs it there, 8-bit weights with 16-bit math, and says so;
    // TensorRT-LLM's scheduler refuses it there, naming the checkpoint. It
    // had always run 16-bit, and DeepSeek-V3 "did not fit" eight H200s;
    // until session 91 it became INT8 on an A100 under every scheduler.
    let dir = tempfile::tempdir().unwrap();
    let model = model_config(
        dir.path(),
        r#"{"num_hidden_layers":2,"hidden_size":256,"num_attention_heads":4,"intermediate_size":512,
            "vocab_size":1000,"quantization_config":{"quant_method":"fp8","fmt":"e4m3"}}"#,
    );
    let precision = |args: &[&str]| {
        let out = dir.path().join("run.json");
        goodput()
            .args(["estimate", "-q", "-n", "2", "-o"])
            .arg(&out)
            .arg("--model")
            .arg(&model)
            .args(args)
            .assert()
            .success();
        read_json(&out)["config"]["engine"]["precision"].as_str().unwrap().to_string()
    };
    assert_eq!(precision(&[]), "fp8");
    assert_eq!(precision(&["--precision", "bf16"]), "bf16");
    assert_eq!(precision(&["--gpu", "a100-80gb"]), "fp8");
    let said = goodput().args(["estimate", "-n", "2", "--gpu", "a100-80gb", "--model"]).arg(&model).output().unwrap();
    let err = String::from_utf8_lossy(&said.stderr);
    assert!(err.contains("note: fp8 on A100 80GB: run as vLLM runs it there, weight-only (W8A16"), "{err}");
    let said = goodput().args(["estimate", "-n", "2", "--gpu", "h100", "--model"]).arg(&model).output().unwrap();
    assert!(!String::from_utf8_lossy(&said.stderr).contains("W8A16"));
    let err = goodput()
        .args(["estimate", "-q", "-n", "2", "--gpu", "a100-80gb", "--scheduler", "trtllm", "--model"])
        .arg(&model)
        .refusal();
    let named = ["--precision auto: ", "checkpoint is FP8", "A100 80GB has none", "--scheduler vllm or sglang"];
    assert!(named.iter().all(|n| err.contains(n)), "{err}");
    let out = dir.path().join("ds.json");
    goodput()
        .args(["estimate", "-q", "-n", "2", "--model", "deepseek-r1", "--gpu", "h200", "--tp", "8", "-o"])
        .arg(&out)
        .assert()
        .success();
    assert_eq!(read_json(&out)["config"]["engine"]["precision"], "fp8");
}

/// Output tokens/s per GPU of every point of a plan's document.
fn per_gpu(doc: &Value) -> Vec<f64> {
    doc["configs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["points"].as_array().unwrap().iter())
        .map(|p| p["output_tokens_per_s_per_gpu"].as_f64().unwrap())
        .collect()
}

#[test]
fn n_below_a_few_requests_per_user_cannot_measure_a_burst_as_the_rate() {
    // `-n 1` at 512 users had measured one step's burst over less than a
    // step: 190,404 tokens/s per H100 (its default peak is ~9,300) and the
    // best point. A point now sends at least 4 requests per user, and says so.
    let dir = tempfile::tempdir().unwrap();
    let run = |extra: &[&str]| {
        let out = dir.path().join("n.json");
        goodput()
            .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "2", "--jobs", "1", "--tp", "1", "--precision", "bf16"])
            .args(["--max-num-batched-tokens", "2048", "--concurrency", "1,64,512", "-o"])
            .arg(&out)
            .args(extra)
            .assert()
            .success();
        read_json(&out)
    };
    let default = run(&[]);
    let peak = per_gpu(&default).into_iter().fold(0.0, f64::max);
    assert!(peak > 1000.0, "{peak}");
    for n in ["1", "4", "64"] {
        let doc = run(&["-n", n]);
        let most = per_gpu(&doc).into_iter().fold(0.0, f64::max);
        assert!(most < 2.0 * peak, "-n {n}: {most} tokens/s per GPU against a default peak of {peak}");
        let notes = doc["notes"].to_string();
        assert!(notes.contains(&format!("-n {n}: a point sends at least 4 requests per user")), "{notes}");
    }
}

#[test]
fn a_point_with_one_request_per_user_is_not_steady_and_never_the_best() {
    // With one request per user no time has every user in the loop: such a
    // point gives the run's window's rate, marked steady: false.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "1", "--jobs", "1", "--tp", "1", "--precision", "bf16"])
        .args(["--max-num-batched-tokens", "2048", "--concurrency", "1,64", "--requests-per-user", "1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let points = doc["configs"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "an unsteady point ends no climb as flat");
    assert_eq!(points[1]["steady"], false, "{}", points[1]);
    assert_eq!(doc["best"]["at"]["point"], 0, "{}", doc["best"]);
    assert!(doc["notes"].to_string().contains("1 point(s) not steady"), "{}", doc["notes"]);
    // The terminal marks the row, not only a note.
    let o = goodput().arg("report").arg(&out).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.lines().any(|l| l.contains("concurrency 64") && l.ends_with("(not steady)")), "{text}");
}

#[test]
fn a_model_that_fits_no_split_names_its_stages_and_what_the_budget_allows() {
    // "l4 tp1 … with tensor parallelism 1" had hidden the 8 stages tried,
    // and suggested --tp 16 on a budget of 8 GPUs. (At 0.8 of the memory:
    // at vLLM's 0.9 eight stages hold the 70B since session 91 sized
    // vLLM's activations by its profile.)
    let err = goodput()
        .args(["plan", "-q", "--gpu", "l4=0.5", "--gpus", "8", "--model", "llama-3.1-70b", "--jobs", "1"])
        .args(["--tp", "1,2", "--precision", "bf16", "--gpu-memory-utilization", "0.8"])
        .refusal();
    assert!(err.contains("l4 tp1 bf16: left out (at --pp 8 (8 GPUs a replica)"), "{err}");
    assert!(err.contains("raise --gpus to 16 (no TP × PP within 8 GPUs holds it; TP 2 × PP 8 does)"), "{err}");
    assert!(!err.contains("give raise"), "{err}");
    assert!(!err.contains("--tp 16"), "{err}");
    let err = goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "1", "--model", "llama-3.1-405b", "--jobs", "1"])
        .args(["--precision", "fp8"])
        .refusal();
    assert!(err.contains("at --pp 1 (1 GPU a replica)") && err.contains("raise --gpus to 8"), "{err}");
    // A TP that does not divide the heads is not a matter of stages.
    let err = goodput().args(["plan", "-q", "--gpu", "h100", "--gpus", "8", "--tp", "3", "--jobs", "1"]).refusal();
    assert!(err.contains("--tp 3 does not divide") && !err.contains("at --pp"), "{err}");
    assert!(!err.contains("--tp 16"), "{err}");
}

#[test]
fn precision_auto_plans_the_checkpoint_s_own_width_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let model = model_config(
        dir.path(),
        r#"{"num_hidden_layers":2,"hidden_size":256,"num_attention_heads":4,"intermediate_size":512,
            "vocab_size":1000,"quantization_config":{"quant_method":"awq","bits":4,"group_size":128}}"#,
    );
    let out = dir.path().join("awq.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "1", "--jobs", "1", "--concurrency", "1", "-n", "4"])
        .args(["--max-num-batched-tokens", "2048", "--model"])
        .arg(&model)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let ids = doc["configs"].to_string();
    assert!(ids.contains("int4") && ids.contains("bf16"), "{ids}");
    assert!(doc["notes"].to_string().contains("checkpoint is int4 (its quantization_config), planned beside"));
}

#[test]
fn lists_that_name_a_value_twice_are_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, "{\"timestamp\": 0, \"input_tokens\": 64, \"output_tokens\": 8}\n").unwrap();
    let trace = trace.to_str().unwrap();
    for args in [
        &["--gpu", "h100", "--pd", "1:1,1:1"][..],
        &["--gpu", "h100", "--tp", "1,1"][..],
        &["--gpu", "h100", "--trace", trace, "--trace-speed", "1,1"][..],
        &["--gpu", "h100", "--precision", "bf16,fp8,bf16"][..],
        &["--gpu", "h100", "--precision", "bf16,fp16"][..],
        &["--gpu", "h100", "--trace", trace, "--router", "round-robin,round-robin"][..],
    ] {
        let err = goodput().args(["plan", "-q", "--gpus", "2"]).args(args).refusal();
        assert!(err.contains("twice"), "{args:?}: {err}");
    }
    // Two offers in one --gpu: told to repeat the flag.
    let err = goodput().args(["plan", "-q", "--gpu", "h100=2.5,a100=1"]).refusal();
    assert!(err.contains("repeat the flag for each, e.g. --gpu h100=2.5 --gpu a100=1"), "{err}");
    // A decimal comma: told to write a point (it had been told to repeat
    // the flag, with "5" as a GPU).
    let err = goodput().args(["plan", "-q", "--gpu", "h100=2,5"]).refusal();
    assert!(err.contains("write its decimals after a point, e.g. h100=2.5"), "{err}");
    // plan's offer given to estimate: told where a price goes there (it had
    // read as an unknown GPU named 'h100=2.5').
    let err = goodput().args(["estimate", "-q", "-n", "4", "--gpu", "h100=2.5"]).refusal();
    assert!(err.contains("--gpu takes a GPU alone here (--gpu h100)") && err.contains("--gpu-hour-usd 2.5"), "{err}");
}

/// A trace of `n` requests one second apart (256 tokens in, 16 out).
fn sparse_trace(dir: &Path, n: usize) -> std::path::PathBuf {
    let trace = dir.join("sparse.jsonl");
    let lines: Vec<String> =
        (0..n).map(|i| format!(r#"{{"timestamp": {i}, "input_tokens": 256, "output_tokens": 16}}"#)).collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    trace
}

/// `--trace`'s default speeds go on doubling while a curve meets the SLO
/// and still rises (every curve had stopped at 16× unsaturated, and the
/// best was whichever the last speed favoured, with no word); speeds given
/// are run as given, with a note naming the curves they leave rising.
#[test]
fn a_trace_curve_climbs_until_it_saturates_or_says_it_did_not() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sparse_trace(dir.path(), 20);
    let run = |extra: &[&str]| {
        let out = dir.path().join("tr.json");
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--jobs", "1"])
            .args(["--slo", "ttft:p95<=10s", "--trace"])
            .arg(&trace)
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let doc = run(&[]);
    let points = doc["configs"][0]["points"].as_array().unwrap();
    let rate = |p: &Value| p["load"]["value"].as_f64().unwrap();
    // 20 requests over 19 s: 16× is 16.8 req/s, far from what an H100 serves.
    let last = points.last().unwrap();
    assert!(rate(last) > 16.0 * 20.0 / 19.0 * 1.5, "{points:?}");
    let before = &points[points.len() - 2];
    let flat = last["output_tokens_per_s"].as_f64().unwrap() < before["output_tokens_per_s"].as_f64().unwrap() * 1.03;
    // Saturated, missed, or past what the configuration serves (a point
    // not steady: 20 requests at that speed are a burst).
    let unsteady = last["steady"] == false;
    assert!(flat || last["meets_slo"] == false || unsteady, "the curve ends saturated: {points:?}");
    assert!(!doc["notes"].to_string().contains("not saturated"), "{}", doc["notes"]);
    // Speeds given are run as given, and the curve they leave rising named.
    let doc = run(&["--trace-speed", "1,2"]);
    let id = doc["configs"][0]["id"].as_str().unwrap().to_string();
    assert_eq!(doc["configs"][0]["points"].as_array().unwrap().len(), 2, "{doc}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("1 of 1 configurations still met the SLO with throughput still rising"), "{notes}");
    assert!(notes.contains(&id) && notes.contains("--trace-speed (e.g. 4,8)"), "{notes}");
}

/// With `--trace` and several routers, a configuration of one engine (one
/// replica of several pipeline stages) has no router to choose: simulated
/// once (it had been once a router, the same id and points twice).
#[test]
fn a_single_replica_is_simulated_once_whatever_the_routers() {
    let dir = tempfile::tempdir().unwrap();
    let trace = sparse_trace(dir.path(), 8);
    let out = dir.path().join("r.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "2", "--tp", "1,2"])
        .args(["--pp", "1,2", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--jobs", "2"])
        .args(["--router", "round-robin,least-loaded", "--trace-speed", "1", "--trace"])
        .arg(&trace)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let mut ids: Vec<&str> = doc["configs"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            "h100-sxm tp1x1 pp2 fp8 mbt2048",
            "h100-sxm tp1x2 fp8 mbt2048 least-loaded",
            "h100-sxm tp1x2 fp8 mbt2048 round-robin",
            "h100-sxm tp2x1 fp8 mbt2048"
        ],
        "{}",
        doc["configs"]
    );
}

/// A `--dataset` some of whose entries pass the model's context is
/// planned, with a warning naming how many and which (the whole search had
/// been refused for one entry, where estimate and bench only warn); one
/// whose every entry passes it is refused before the search, naming the
/// entry and the context (each curve would stop after one point, and the
/// verdict blame the SLO).
#[test]
fn a_dataset_prompt_past_the_context_is_warned_of_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let ds = dir.path().join("ds.jsonl");
    // 140,000 words: 140,000 tokens as the simulated engine counts them,
    // past Llama 3.1's 131,072 (120,000 had passed only as bytes over 4).
    let long = format!(r#"{{"prompt": "{}"}}"#, "word ".repeat(140_000));
    let mut lines: Vec<String> = (0..5).map(|i| format!(r#"{{"prompt": "short question {i}"}}"#)).collect();
    lines.push(long.clone());
    std::fs::write(&ds, lines.join("\n")).unwrap();
    let plan = || {
        let mut c = goodput();
        c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1", "--tp", "1", "--pp", "1"])
            .args(["--precision", "fp8", "--concurrency", "1,2", "--requests-per-user", "6", "--output-tokens", "8"])
            .arg("--dataset");
        c
    };
    let out = dir.path().join("p.json");
    let o = plan().arg(&ds).arg("-o").arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let notes = read_json(&out)["notes"].to_string();
    assert!(notes.contains("1 of its 6 entries (6) pass ") && notes.contains("context of 131072 tokens"), "{notes}");
    assert!(notes.contains("entry 6's prompt") && notes.contains("counts failed against the SLO"), "{notes}");

    let all = dir.path().join("all.jsonl");
    std::fs::write(&all, [long.clone(), long].join("\n")).unwrap();
    let err = plan().arg(&all).refusal();
    assert!(err.contains("entry 1's prompt") && err.contains("context of 131072 tokens"), "{err}");
    assert!(err.contains("(and so does every other entry)"), "{err}");
}

/// A heavier load refused (here by the memory guard) cuts the curve there:
/// the points before it are kept, and the cut said (the whole curve had
/// been thrown away: "0 points simulated").
#[test]
fn a_refused_heavy_point_keeps_the_points_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cut.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1", "--tp", "1", "--pp", "1"])
        .args(["--precision", "fp8", "--max-num-batched-tokens", "8192", "--jobs", "16"])
        .args(["--requests-per-user", "100", "--concurrency", "1,1000", "--input-tokens", "128", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan cut");
    let c = &doc["configs"][0];
    assert_eq!((c["status"].as_str(), c["points"].as_array().unwrap().len()), (Some("ok"), 1), "{c}");
    let cut = c["cut"].as_str().unwrap();
    assert!(cut.contains("1000 users per replica") && cut.contains("in memory"), "{cut}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("its curve is cut where a heavier load was refused"), "{notes}");
    assert!(notes.contains("1 configuration, 1 point simulated"), "{notes}");
    // What each figure counts, said in the notes (not only docs/plan.md).
    assert!(notes.contains("spans: each point's tok/s") && notes.contains("as if above the GPUs' TDP"), "{notes}");
    // A --ramp-up past what a point can send is named as too long (it had
    // read as too many requests: "give fewer requests").
    let err = failed_config(&["--concurrency", "1", "--ramp-up", "1000000s"]);
    assert!(err.contains("a --ramp-up of 11 days 13 h 46 min 40 s is too long"), "{err}");
}

/// A `--pd` pool whose TP does not divide the model's heads is named as
/// such (it had read "no ratio fit the budget ... raise --gpus", with the
/// unit of 7 GPUs well inside 64).
#[test]
fn a_pd_pool_whose_tp_does_not_divide_the_heads_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pd.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "64", "--tp", "1", "--pp", "1"])
        .args(["--precision", "fp8", "--concurrency", "1", "--pd", "1xTP3:1xTP4", "--input-tokens", "512"])
        .args(["--output-tokens", "16", "-o"])
        .arg(&out)
        .assert()
        .success();
    let notes = read_json(&out)["notes"].to_string();
    assert!(notes.contains("--pd 1xTP3:1xTP4: no ratio was simulated") && notes.contains("32"), "{notes}");
    assert!(notes.contains("does not divide") && !notes.contains("raise --gpus"), "{notes}");
}

/// `--percentile 0` is refused (latencies "at p0" had been printed), and
/// flags plan refuses at run time are not in its help.
#[test]
fn plan_refuses_p0_and_hides_the_flags_it_refuses() {
    let err = goodput().args(["plan", "--gpu", "h100", "--percentile", "0"]).refusal();
    assert!(err.contains("above 0"), "{err}");
    let help = goodput().args(["plan", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--trace-speed") && help.contains("--dataset") && help.contains("--turns"), "{help}");
    // Sessions as plan runs them, not as bench's --rate starts them.
    assert!(
        help.contains("users who think (--think-time) climb past the batch limit") && !help.contains("--rate starts")
    );
    for flag in ["--markdown", "--images", "--score", "--cancel-rate", "--duration", "--burstiness"] {
        assert!(!help.lines().any(|l| l.trim_start().starts_with(flag)), "{flag} in plan --help");
    }
}

/// Without an SLO no token is judged: the best point is the most output
/// tokens per dollar, and named so (it had said "good output tokens" beside
/// a goodput of "-"); J/tok shows three significant digits (two decimals
/// had shown 0.07 and 0.08, a step of 14%).
#[test]
fn plan_without_an_slo_names_its_tokens_per_dollar_and_j_per_token_in_full() {
    let dir = tempfile::tempdir().unwrap();
    let doc = plan(dir.path(), "p.json", &["h100=2.5"], 1, &[]);
    let reason = doc["best"]["reason"].as_str().unwrap();
    assert!(reason.contains("the most output tokens per dollar") && !reason.contains("good"), "{reason}");
    let o = goodput().arg("report").arg(dir.path().join("p.json")).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    let id = &doc["best"]["at"];
    let best =
        &doc["configs"][id["config"].as_u64().unwrap() as usize]["points"][id["point"].as_u64().unwrap() as usize];
    let j = best["joules_per_output_token"].as_f64().unwrap();
    let digits = (2 - j.log10().floor() as i32).max(0) as usize;
    assert!(said.contains(&format!(" {j:.digits$} ")), "{j} {said}");
}

/// `--gpu H100` and `--gpu h100` are one GPU: both plans name it by the
/// catalog's id (`h100-sxm`) in every id, param, CSV row and HTML label,
/// so their documents are the same and compare or merge as one; an unknown
/// GPU is refused with the catalog's ids to choose from.
#[test]
fn a_gpu_is_named_by_its_catalog_id_whatever_case_it_is_given_in() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, gpu: &str| {
        let csv = dir.path().join(format!("{name}.csv"));
        let html = dir.path().join(format!("{name}.html"));
        let mut c = goodput();
        c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpus", "1", "--gpu", gpu, "--tp", "1"])
            .args(["--precision", "fp8", "--max-num-batched-tokens", "2048", "--input-tokens", "128"])
            .args(["--output-tokens", "16", "--concurrency", "1,8", "--requests-per-user", "2", "-o"])
            .arg(dir.path().join(format!("{name}.json")))
            .arg("--csv")
            .arg(&csv)
            .arg("--html")
            .arg(&html)
            .assert()
            .success();
        let doc = read_json(&dir.path().join(format!("{name}.json")));
        (doc, std::fs::read_to_string(csv).unwrap(), std::fs::read_to_string(html).unwrap())
    };
    let (upper, upper_csv, upper_html) = run("upper", "H100=2.5");
    let (lower, lower_csv, _) = run("lower", "h100=2.5");
    let configs = |d: &Value| d["configs"].clone();
    assert_eq!(configs(&upper), configs(&lower));
    assert_eq!(upper_csv, lower_csv);
    assert_eq!(upper["frontier"], lower["frontier"]);
    let c = &upper["configs"][0];
    assert_eq!(c["id"], "h100-sxm tp1x1 fp8 mbt2048", "{c}");
    assert_eq!(c["params"]["gpu"], "h100-sxm", "{c}");
    assert_eq!(c["gpu"], "H100 SXM", "{c}");
    assert!(upper_csv.contains("h100-sxm tp1x1") && !upper_csv.contains("H100 tp"), "{upper_csv}");
    assert!(upper_html.contains("h100-sxm tp1x1") && !upper_html.contains("H100 tp"));
    let err = goodput().args(["plan", "--gpu", "H999=2"]).refusal();
    assert!(err.contains("H999") && err.contains("known GPUs: h100-sxm, h100-pcie, h200"), "{err}");
}

/// A trace of `n` requests at about 2 a second (exponential gaps), prompts
/// of 200 to 2,000 tokens and answers of 50 to 400, from a fixed draw.
fn poisson_trace(dir: &Path, n: usize) -> (std::path::PathBuf, Vec<(f64, u32)>) {
    let mut state: u64 = 1;
    let mut next = || {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    let mut t = 0.0;
    let mut entries = Vec::new();
    let mut lines = Vec::new();
    for _ in 0..n {
        t = ((t - next().ln() / 2.0) * 1000.0_f64).round() / 1000.0;
        let input = 200 + (next() * 1800.0) as u32;
        let output = 50 + (next() * 350.0) as u32;
        entries.push((t, output));
        lines.push(format!(r#"{{"timestamp": {t:.3}, "input_tokens": {input}, "output_tokens": {output}}}"#));
    }
    let path = dir.join("poisson.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    (path, entries)
}

/// A capped trace replayed faster than a configuration serves it comes as
/// one burst: its window is mostly ramp-up and drain, its TTFT within the
/// SLO. Such a point is judged as estimate judges an open loop: marked not
/// steady, with the reason, ending its curve, and never the best (it had
/// been marked met and chosen best at about five times the requests a
/// second the configuration completed).
#[test]
fn a_trace_replayed_as_a_burst_is_not_steady_and_never_the_best() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, entries) = poisson_trace(dir.path(), 400);
    let out = dir.path().join("burst.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "4", "--tp", "1", "--pp", "4", "--precision", "fp8"])
        .args(["--max-num-batched-tokens", "2048", "--slo", "ttft:p95<=1s", "-n", "200", "--jobs", "1", "--trace"])
        .arg(&trace)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --trace, a burst");
    let points = doc["configs"][0]["points"].as_array().unwrap();
    let last = points.last().unwrap();
    assert_eq!(last["steady"], false, "the curve ends at the point not steady: {points:?}");
    assert!(last["unsteady"].as_str().is_some_and(|w| !w.is_empty()), "{last}");
    assert!(points[..points.len() - 1].iter().all(|p| p["steady"] != false), "{points:?}");
    let best = &doc["best"]["at"];
    let best = &points[best["point"].as_u64().unwrap() as usize];
    assert_ne!(best["steady"], false, "{best}");
    // What the best point served, in requests a second (its output tokens
    // a second over the mean answer of the requests replayed), against what
    // it was offered: a point that keeps up serves most of it.
    let replayed = &entries[..200];
    let mean_output = replayed.iter().map(|e| f64::from(e.1)).sum::<f64>() / replayed.len() as f64;
    let served = best["output_tokens_per_s"].as_f64().unwrap() / mean_output;
    let offered = best["load"]["value"].as_f64().unwrap();
    assert!(offered < 2.0 * served, "the best point was offered {offered} req/s and served {served}: {points:?}");
    // The offered rate is that of the requests replayed (the first 200,
    // over their span from the trace's first request).
    let span = replayed[199].0 - replayed[0].0;
    let speed = |p: &Value| p["load"]["value"].as_f64().unwrap() * span / 200.0;
    assert!((speed(&points[0]) / 0.25 - 1.0).abs() < 1e-3, "{}", points[0]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("not steady") && notes.contains("ends its curve"), "{notes}");
}

/// The configurations a plan ran, each of whose points answered every
/// request (checked here), and its notes as one string.
fn ran_whole(doc: &Value) -> (Vec<String>, String) {
    let mut ids = Vec::new();
    for c in doc["configs"].as_array().unwrap() {
        for p in c["points"].as_array().unwrap() {
            assert_eq!(p["failed"], 0, "{p}");
        }
        ids.push(c["id"].as_str().unwrap().to_string());
    }
    (ids, doc["notes"].to_string())
}

/// An expert-parallel group's ranks each keep their own KV cache and run a
/// request whole: a request longer than one rank's share is refused by the
/// engine (it had run over the group's caches added up), so the plan leaves
/// such a group out, names the rank's share, and points to TP as wide as
/// EP (one rank over the same GPUs), which it simulates.
#[test]
fn a_request_past_one_attention_ranks_cache_leaves_the_group_out() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ranks.json");
    goodput()
        .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100", "--gpus", "2", "--tp", "1,2", "--ep", "2"])
        .args(["--precision", "bf16", "--gpu-memory-utilization", "0.45", "--max-num-batched-tokens", "2048"])
        .args(["--input-tokens", "6000", "--output-tokens", "32", "--concurrency", "1,2", "--requests-per-user", "2"])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let (ids, notes) = ran_whole(&read_json(&out));
    assert_eq!(ids, ["h100-sxm tp2x1 ep2 bf16 mbt2048"], "{ids:?}");
    assert!(
        notes.contains("h100-sxm tp1 ep2 bf16: left out (")
            && notes.contains("more than the 416 one attention rank of its replica holds")
            && notes.contains("TP 2 with EP 2, which the search runs"),
        "{notes}"
    );
}

/// A replica whose KV cache cannot hold the workload's typical request is
/// not simulated: the engine refuses each such request. A single L4 in
/// BF16 (8,128 tokens of cache at vLLM's 0.9 until session 91; at 0.78
/// here since vLLM's activations are sized by its profile) had run
/// long-document's prompts of about 10,000 tokens, every request failing,
/// and been listed as run with "no point with a per-user speed". Its deeper pipelines, whose caches hold
/// the request, are simulated, and a note says why the shallow one is not;
/// where no depth of the lists holds it, the TP is left out with the fix.
#[test]
fn a_replica_whose_cache_cannot_hold_the_request_is_left_out_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "l4", "--gpus", "2", "--precision", "bf16"])
            .args(["--preset", "long-document", "--concurrency", "1,2", "--requests-per-user", "2", "--jobs", "2"])
            .args(["--max-num-batched-tokens", "2048", "--gpu-memory-utilization", "0.78"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let (ids, notes) = ran_whole(&run("deeper.json", &["--tp", "1", "--pp", "1,2"]));
    assert_eq!(ids, ["l4 tp1x1 pp2 bf16 mbt2048"], "{ids:?}");
    assert!(
        notes.contains("l4 tp1 bf16 pp1: left out (")
            && notes.contains("tokens of KV cache, more than the 7376 its replica's cache holds")
            && notes.contains("deeper pipelines, whose caches hold it, are simulated"),
        "{notes}"
    );

    let (ids, notes) = ran_whole(&run("none.json", &["--tp", "1,2", "--pp", "1"]));
    assert_eq!(ids, ["l4 tp2x1 bf16 mbt2048"], "{ids:?}");
    assert!(
        notes.contains("l4 tp1 bf16: left out (at --pp 1 (1 GPU a replica): --input-tokens uniform:8192..12288")
            && notes.contains("give --precision fp8")
            && notes.contains("or shorter requests)")
            && !notes.contains("raise --gpus"),
        "{notes}"
    );
}

/// A steady trace point served the trace as it came: its output tokens/s
/// are the answers it gave over the span they were offered in, the offered
/// requests/s times their mean answer, at a fast replay as at a slow one.
/// They had been over the run's window, whose drain after the last arrival
/// diluted a fast replay's: 7,531 tokens/s of 9,172 offered, every request
/// served, which ranked fast speeds low and overstated their cost.
#[test]
fn a_steady_trace_point_s_throughput_is_what_it_served_over_the_offered_span() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, entries) = poisson_trace(dir.path(), 400);
    let out = dir.path().join("served.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100=2", "--gpus", "4", "--tp", "1", "--pp", "1", "--precision", "fp8"])
        .args(["--max-num-batched-tokens", "2048", "--slo", "ttft:p95<=2s", "--jobs", "1", "--trace-speed", "1,16"])
        .arg("--trace")
        .arg(&trace)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --trace, served");
    let mean_output = entries.iter().map(|e| f64::from(e.1)).sum::<f64>() / entries.len() as f64;
    let points = doc["configs"][0]["points"].as_array().unwrap();
    assert_eq!(points.len(), 2, "{points:?}");
    for p in points {
        assert_ne!(p["steady"], false, "four H100s keep up with 16 times 2 req/s: {p}");
        assert_eq!(p["completed"], 400, "{p}");
        let offered = p["load"]["value"].as_f64().unwrap() * mean_output;
        let served = p["output_tokens_per_s"].as_f64().unwrap();
        assert!((served / offered - 1.0).abs() < 1e-6, "served {served} tokens/s of {offered} offered: {p}");
        let per_gpu = p["output_tokens_per_s_per_gpu"].as_f64().unwrap();
        assert!((per_gpu * 4.0 / served - 1.0).abs() < 1e-9, "{p}");
        let usd = p["usd_per_million_output_tokens"].as_f64().unwrap();
        assert!((usd - 2.0 * 4.0 / (served * 3600.0) * 1e6).abs() < 1e-6 * usd, "{p}");
    }
    // The notes say what the figures count.
    let notes = doc["notes"].to_string();
    assert!(notes.contains("spans: each steady point's tok/s") && notes.contains("offered"), "{notes}");
}

/// TTFT need not grow with the load: with chunked prefill, more users batch
/// more prompts a step. A curve whose TTFT misses the SLO at one load and
/// meets it at the next is searched past the miss (it had stopped there,
/// and its best point, at the next load, was lost); two misses in a row
/// end it. The curve is one with each step chosen after the one before
/// (a step ahead, its TTFT at this load grows with the users: 67 to 139 ms).
#[test]
fn a_ttft_miss_followed_by_a_met_point_is_searched_past() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ttft.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-70b", "--gpu", "h100=2.5", "--gpus", "8", "--tp", "4"])
        .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--jobs", "1"])
        .args(["--input-tokens", "1024", "--output-tokens", "256", "--no-async-scheduling"])
        .args(["--slo", "ttft:p95<=120ms", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    let points = doc["configs"][0]["points"].as_array().unwrap();
    let met: Vec<bool> = points.iter().map(|p| p["meets_slo"] == true).collect();
    let ttft: Vec<f64> = points.iter().map(|p| p["ttft_ms"].as_f64().unwrap()).collect();
    // A miss followed by a met point: TTFT fell as the load rose.
    let past = (1..points.len()).find(|&i| !met[i - 1] && met[i]);
    let Some(i) = past else { panic!("no met point after a miss: {met:?}, TTFT {ttft:?}") };
    assert!(ttft[i] < ttft[i - 1], "{ttft:?}");
    // No two misses in a row before the end.
    assert!((1..points.len() - 1).all(|k| met[k - 1] || met[k]), "{met:?}");
    // The best is the met point past the miss, or one after it.
    let best = doc["best"]["at"]["point"].as_u64().unwrap() as usize;
    assert!(best >= i, "best {best}, the miss at {}: {met:?}", i - 1);
}

/// The `spans:` note says `estimate` reads lower tok/s and higher TTFT,
/// with pipeline stages too. Until session 46 a pipeline read the other way
/// (its step held every micro-batch for a prompt chunk's whole trip, which
/// users apart met in nearly every step), and the note said so where a
/// configuration had stages; each stage now passes the chunk once.
#[test]
fn the_spans_note_holds_for_a_pipeline_as_for_the_rest() {
    let note = |pp: &str| {
        let o = goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "2", "--tp", "1"])
            .args(["--pp", pp, "--precision", "fp8", "--max-num-batched-tokens", "2048", "--concurrency", "1,4"])
            .args(["--output-tokens", "16", "--requests-per-user", "2", "--jobs", "1"])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.lines().find(|l| l.contains("spans:")).map(str::to_string).unwrap_or_default()
    };
    let flat = note("1");
    assert!(flat.contains("read lower tok/s and higher TTFT") && !flat.contains("pipeline"), "{flat}");
    assert_eq!(note("2"), flat);
}

/// Ctrl-C stops the search: no configuration is begun after it, the ones
/// simulated are written, marked interrupted and counted in a note, and
/// goodput exits 130 (the signal had killed it, every configuration done
/// lost).
#[cfg(unix)]
#[test]
fn ctrl_c_stops_the_search_and_writes_what_was_simulated() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    let child = cmd::goodput_child()
        .args(["plan", "--model", "llama-3.1-8b", "--gpus", "8", "--gpu", "h100=2.5", "--gpu", "h200=3.2"])
        .args(["--tp", "1,2,4,8", "--precision", "bf16,fp8", "--max-num-batched-tokens", "2048,8192"])
        .args(["--input-tokens", "256", "--output-tokens", "32", "--concurrency", "1,8,32,64"])
        .args(["--requests-per-user", "4", "--jobs", "1", "-o"])
        .arg(&out)
        .spawn()
        .unwrap();
    let mut child = cmd::Kill(child);
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Stopped once its first configuration is done.
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.ends_with(" points") || l.ends_with(" point")) {
        seen.push(rx.recv_timeout(std::time::Duration::from_secs(120)).expect("no configuration done in 2 minutes"));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
    let status = child.0.wait().unwrap();
    let rest: Vec<String> = rx.try_iter().collect();
    assert_eq!(status.code(), Some(130), "{seen:?} {rest:?}");
    assert!(rest.iter().any(|l| l.contains("stopping the plan (Ctrl-C)")), "{rest:?}");
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "an interrupted plan");
    assert_eq!(doc["interrupted"], true);
    let notes = doc["notes"].to_string();
    let simulated = doc["configs"].as_array().unwrap().len();
    let searched: usize = notes
        .split("configurations searched")
        .next()
        .and_then(|head| head.rsplit("of the ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count of the configurations searched: {notes}"));
    assert!(simulated >= 1 && simulated < searched, "{simulated} of {searched}");
    assert!(doc["configs"][0]["points"].as_array().is_some_and(|p| !p.is_empty()), "{}", doc["configs"][0]);
    // Read again, its frontier says it is unfinished from its first line.
    let o = goodput().arg("report").arg(&out).output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success() && shown.trim_start().starts_with("INTERRUPTED · predicted frontier"), "{shown}");
    // Set beside a frontier, it is said to be unfinished.
    let o = goodput().arg("compare").arg(&out).arg(&out).output().unwrap();
    let shown = String::from_utf8_lossy(&o.stdout);
    assert!(shown.contains("were interrupted: each holds the configurations done before the stop"), "{shown}");
}

/// One GPU priced and another not: the plan says which has no price and
/// that the best point is then ranked per GPU, not per dollar (it had been
/// said only inside the best point's reason).
#[test]
fn a_gpu_without_a_price_beside_priced_ones_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let doc = plan(dir.path(), "p.json", &["h100=2.5", "h200"], 1, &[]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("--gpu h200 has no price per GPU-hour where the others have one"), "{notes}");
    assert!(doc["frontier_per_usd"].as_array().is_none_or(|f| f.is_empty()), "{}", doc["frontier_per_usd"]);
    // A GPU without a price none of whose configurations fit changes
    // nothing, and is not named (it had been, beside a ranking per dollar).
    let out = dir.path().join("q.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-70b", "--gpu", "h100=2.5", "--gpu", "l4", "--gpus", "2"])
        .args(["--tp", "2", "--precision", "fp8", "--concurrency", "1,4", "--requests-per-user", "2"])
        .args(["--input-tokens", "256", "--output-tokens", "32", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert!(!doc["notes"].to_string().contains("no price per GPU-hour"), "{}", doc["notes"]);
    assert!(doc["best"]["reason"].to_string().contains("per dollar"), "{}", doc["best"]);
}

/// Two token budgets that never bind (prompts of 128 tokens, a few users)
/// run the same steps: the later curve is the first's, point for point.
/// It is drawn once, named in `points_of`, and its line says which setting
/// made no difference; both had been on the frontier with the same figures.
#[test]
fn a_budget_that_never_binds_shares_the_first_budget_s_points() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    let o = goodput()
        .args(["plan", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--tp", "1", "--gpus", "1", "--pp", "1"])
        .args(["--precision", "bf16", "--max-num-batched-tokens", "2048,8192", "--concurrency", "1,4"])
        .args(["--input-tokens", "128", "--output-tokens", "16", "--requests-per-user", "2", "--jobs", "1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan with tied budgets");
    let configs = doc["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2, "{doc:#}");
    let (first, later) = (&configs[0], &configs[1]);
    assert_eq!(first["params"]["max_num_batched_tokens"], "2048");
    assert_eq!(first["points"].as_array().unwrap().len(), 2, "{first:#}");
    assert_eq!(later["points_of"], first["id"], "{later:#}");
    assert!(later["points"].as_array().unwrap().is_empty(), "{later:#}");
    let why = later["dominated"].as_str().unwrap();
    assert!(why.contains("max_num_batched_tokens 8192 (against 2048) made no difference"), "{why}");
    // Every point on the frontier is the first configuration's.
    assert!(doc["frontier"].as_array().unwrap().iter().all(|p| p["config"] == 0), "{:#}", doc["frontier"]);
    assert!(text.contains("1 ran, 1 share its points"), "{text}");
}

/// Behind SGLang, `--load-balance-method` is searched on each configuration
/// whose DP attention has ranks to pick (more `ep` than `tp`), and only
/// there: a dense replica set runs once, at its controller's default for
/// it (round-robin, named so that a grid runs it). Each method is its own
/// configuration, named in its id, its parameters and its command (SGLang's
/// spelling), and it reaches the engine: the same group's figures differ
/// by method. Given without SGLang, twice, or as the bootstrap room, it is
/// refused with the fix.
#[test]
fn plan_searches_sglangs_load_balance_method_on_the_ranks_of_dp_attention() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lb.json");
    let base = |c: &mut assert_cmd::Command| {
        c.args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2.5", "--gpus", "4", "--tp", "1"])
            .args(["--pp", "1", "--ep", "1,4", "--precision", "fp8", "--max-num-batched-tokens", "8192"])
            .args(["--input-tokens", "lognormal:1024,0.8", "--output-tokens", "lognormal:256,0.8"])
            .args(["--concurrency", "64", "--requests-per-user", "4"]);
    };
    let mut c = goodput();
    base(&mut c);
    c.args(["--serve-engine", "sglang", "--load-balance-method", "auto,total_tokens", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --load-balance-method");
    let configs = doc["configs"].as_array().unwrap();
    let ids: Vec<&str> = configs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["h100-sxm tp1x4 fp8 mbt8192", "h100-sxm tp1x4 ep4 fp8 mbt8192", "h100-sxm tp1x4 ep4 fp8 mbt8192 total-tokens"]
    );
    let method = |i: usize| configs[i]["params"].get("load_balance_method").and_then(Value::as_str);
    assert_eq!([method(0), method(1), method(2)], [Some("round_robin"), Some("auto"), Some("total_tokens")]);
    let command = |i: usize| configs[i]["serve_command"]["command"].as_str().unwrap().to_string();
    assert!(command(0).contains("--dp-size 4 --load-balance-method round_robin "), "{}", command(0));
    assert!(command(1).contains("--enable-dp-attention --ep-size 4 --load-balance-method auto "), "{}", command(1));
    assert!(command(2).contains("--load-balance-method total_tokens "), "{}", command(2));
    // The method reached the engine: the two differ (a configuration whose
    // points are another's within 0.1 % keeps none of its own).
    let figures = |i: usize| {
        let p = configs[i]["points"].as_array()?.first()?;
        Some((p["output_tokens_per_s_per_gpu"].as_f64()?, p["ttft_ms"].as_f64()?))
    };
    let (auto, tokens) = (figures(1), figures(2));
    assert!(auto.is_some() && tokens.is_some() && auto != tokens, "{auto:?} {tokens:?}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("each --load-balance-method searched: auto (the ranks in turn"), "{notes}");
    assert!(notes.contains("total-tokens (the fewest tokens held"), "{notes}");
    // Refused, each with its fix.
    let refused = |extra: &[&str]| {
        let mut c = goodput();
        base(&mut c);
        c.args(extra).refusal()
    };
    let e = refused(&["--load-balance-method", "total-tokens"]);
    assert!(e.contains("add --serve-engine sglang"), "{e}");
    let e = refused(&["--serve-engine", "sglang", "--load-balance-method", "auto,total-tokens,total_tokens"]);
    assert!(e.contains("names total-tokens twice"), "{e}");
    let e = refused(&["--serve-engine", "sglang", "--load-balance-method", "follow-bootstrap-room"]);
    assert!(e.contains("no room to follow"), "{e}");
    let e = refused(&["--serve-engine", "sglang", "--load-balance-method", "fewest"]);
    assert!(e.contains("unknown --load-balance-method `fewest`"), "{e}");
}

/// Behind SGLang, `--mixed-chunk off,on` runs each colocated configuration
/// with prompts and decodes apart (SGLang's default) and with a prompt chunk
/// beside the running decodes (`--enable-mixed-chunk`); a disaggregated one
/// runs once. Mixed, the decodes stall behind no prompt: at 64 users of
/// 2,048-token prompts the p99 TPOT falls and the output rises. Each is
/// named in its id, its parameters and its command; `on` without SGLang,
/// a switch twice, or another word is refused with the fix.
#[test]
fn plan_searches_sglangs_mixed_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("mixed.json");
    let base = |c: &mut assert_cmd::Command| {
        c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--concurrency", "64"])
            .args(["--requests-per-user", "2", "--input-tokens", "2048", "--output-tokens", "64"])
            .args(["--percentile", "99"]);
    };
    let mut c = goodput();
    base(&mut c);
    c.args(["--serve-engine", "sglang", "--mixed-chunk", "off,on", "--pd", "1:1", "-o"]).arg(&out).assert().success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --mixed-chunk");
    let configs = doc["configs"].as_array().unwrap();
    let ids: Vec<&str> = configs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["h100-sxm tp1x2 fp8 mbt2048", "h100-sxm tp1x2 fp8 mbt2048 mixed", "h100-sxm 1P+1D tp1 fp8 mbt2048"]
    );
    let mixed = |i: usize| configs[i]["params"].get("mixed_batches").and_then(Value::as_str);
    assert_eq!([mixed(0), mixed(1), mixed(2)], [Some("false"), Some("true"), None]);
    let command = |i: usize| configs[i]["serve_command"]["command"].as_str().unwrap().to_string();
    assert!(!command(0).contains("--enable-mixed-chunk"), "{}", command(0));
    assert!(command(1).contains("--enable-mixed-chunk"), "{}", command(1));
    assert!(!command(2).contains("--enable-mixed-chunk"), "{}", command(2));
    let at = |i: usize| {
        let p = &configs[i]["points"][0];
        (p["tpot_ms"].as_f64().unwrap(), p["output_tokens_per_s_per_gpu"].as_f64().unwrap())
    };
    let ((apart_tpot, apart_out), (mixed_tpot, mixed_out)) = (at(0), at(1));
    assert!(mixed_tpot < apart_tpot && mixed_out > apart_out, "apart {:?}, mixed {:?}", at(0), at(1));
    assert!(doc["notes"].to_string().contains("with --mixed-chunk on"), "{}", doc["notes"]);
    // Refused, each with its fix.
    let refused = |extra: &[&str]| {
        let mut c = goodput();
        base(&mut c);
        c.args(extra).refusal()
    };
    let e = refused(&["--mixed-chunk", "on"]);
    assert!(e.contains("add --serve-engine sglang"), "{e}");
    let e = refused(&["--serve-engine", "sglang", "--mixed-chunk", "on,true"]);
    assert!(e.contains("names a switch twice"), "{e}");
    let e = refused(&["--serve-engine", "sglang", "--mixed-chunk", "sometimes"]);
    assert!(e.contains("'sometimes' is neither on nor off"), "{e}");
}

/// With a trace behind SGLang, a dense model's replicas behind round-robin
/// or least-loaded are one server of `--dp-size` (their commands name its
/// `--load-balance-method`), and are predicted behind its controller, on
/// the loads the replicas publish: both run, and the note says so. Behind
/// vLLM, least-loaded is one server of `--data-parallel-size`, predicted
/// behind its own front end's balancer (`internal_lb`), and round-robin
/// replicas behind a router.
#[test]
fn a_trace_plan_routes_dense_replicas_by_the_servers_own_balancer() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let lines: Vec<String> = (0..200)
        .map(|i| format!(r#"{{"timestamp": {:.2}, "input_tokens": 1024, "output_tokens": 32}}"#, i as f64 * 0.02))
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    let run = |engine: &str| {
        let out = dir.path().join(format!("{engine}.json"));
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048"])
            .args(["--router", "round-robin,least-loaded", "--trace-speed", "2", "--serve-engine", engine, "--trace"])
            .arg(&trace)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let said = "whose data-parallel controller routes them";
    let doc = run("sglang");
    let configs = doc["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2, "{}", doc["configs"]);
    for (c, method) in configs.iter().zip(["round_robin", "total_requests"]) {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["points"][0]["completed"], 200, "{c}");
        let command = c["serve_command"]["command"].as_str().unwrap();
        assert!(command.contains(&format!("--dp-size 2 --load-balance-method {method} ")), "{command}");
        // Named in the parameters, so that a grid's --estimate runs it too.
        assert_eq!(c["params"]["load_balance_method"], method, "{}", c["params"]);
    }
    assert!(doc["notes"].to_string().contains(said), "{}", doc["notes"]);
    assert!(doc["configs"].to_string().find("internal_lb").is_none(), "{}", doc["configs"]);
    let vllm = run("vllm");
    assert!(!vllm["notes"].to_string().contains(said));
    let configs = vllm["configs"].as_array().unwrap();
    let internal = |c: &Value| c["params"].get("internal_lb").and_then(Value::as_str).map(str::to_string);
    let by_router = |r: &str| configs.iter().find(|c| c["params"]["router"] == r).unwrap_or_else(|| panic!("{r}"));
    let (rr, least) = (by_router("round-robin"), by_router("least-loaded"));
    assert_eq!((internal(rr), internal(least).as_deref()), (None, Some("true")));
    assert_eq!(least["points"][0]["completed"], 200, "{least}");
    let command = least["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains("--data-parallel-size 2"), "{command}");
    assert!(vllm["notes"].to_string().contains("whose front ends balance them themselves"), "{}", vllm["notes"]);
}

/// In closed loops a dense model's replicas are one server too: behind
/// vLLM their parameters name its own front ends' balancing
/// (`internal_lb`), behind SGLang its controller's default there
/// (round-robin, which the command sets), so that the grid's own
/// --estimate runs what the command starts; the closed loops split the
/// users evenly over them, and the notes and the grid's header say so.
#[test]
fn a_closed_loop_plan_names_the_servers_own_balancer_of_dense_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let run = |engine: &str| {
        let (out, grid) = (dir.path().join(format!("{engine}.json")), dir.path().join(format!("{engine}.toml")));
        goodput()
            .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "1"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "2048", "--serve-engine", engine])
            .args([
                "--concurrency",
                "2,8",
                "--requests-per-user",
                "4",
                "--input-tokens",
                "256",
                "--output-tokens",
                "16",
            ])
            .arg("-o")
            .arg(&out)
            .arg("--grid-out")
            .arg(&grid)
            .assert()
            .success();
        (read_json(&out), std::fs::read_to_string(&grid).unwrap())
    };
    let (vllm, grid) = run("vllm");
    let c = &vllm["configs"][0];
    assert_eq!((c["params"]["dp"].as_str(), c["params"]["internal_lb"].as_str()), (Some("2"), Some("true")), "{c}");
    assert!(c["params"].get("router").is_none(), "{}", c["params"]);
    let command = c["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains("--data-parallel-size 2 ") && !command.contains("internal"), "{command}");
    let notes = vllm["notes"].to_string();
    assert!(notes.contains("the closed loops split the users evenly over them"), "{notes}");
    assert!(grid.contains("internal_lb = \"true\"") && grid.contains("the sweep's --estimate runs its rule"), "{grid}");
    let (sglang, grid) = run("sglang");
    let c = &sglang["configs"][0];
    assert_eq!(c["params"]["load_balance_method"], "round_robin", "{}", c["params"]);
    let command = c["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains("--dp-size 2 --load-balance-method round_robin "), "{command}");
    let notes = sglang["notes"].to_string();
    assert!(notes.contains("deals them the requests in turn") && !notes.contains("internal_lb"), "{notes}");
    assert!(grid.contains("load_balance_method = \"round_robin\""), "{grid}");
    // One replica: no balancer to name.
    let one = dir.path().join("one.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2.5", "--gpus", "1", "--tp", "1", "--pp", "1"])
        .args(["--precision", "fp8", "--max-num-batched-tokens", "2048", "--concurrency", "2"])
        .args(["--requests-per-user", "4", "--input-tokens", "256", "--output-tokens", "16", "-o"])
        .arg(&one)
        .assert()
        .success();
    let params = read_json(&one)["configs"][0]["params"].to_string();
    assert!(!params.contains("internal_lb") && !params.contains("load_balance_method"), "{params}");
}

/// `--kv-cache-dtype auto,fp8` searches both caches: each configuration
/// twice, the FP8 cache's id ending `kvfp8`, its parameters and command
/// naming it; where the 16-bit cache holds too few of the users' long
/// prompts, the FP8 one (twice the tokens) serves more output a GPU. A
/// dtype named twice, or none, is refused with the fix.
#[test]
fn plan_searches_the_kv_cache_dtype() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("kv.json");
    let base = |c: &mut assert_cmd::Command| {
        c.args(["plan", "-q", "--model", "llama-3.3-70b", "--gpu", "h100=2.5", "--gpus", "2", "--tp", "2"])
            .args(["--pp", "1", "--precision", "fp8", "--max-num-batched-tokens", "8192"])
            .args(["--input-tokens", "4096", "--output-tokens", "256", "--concurrency", "16,128"])
            .args(["--requests-per-user", "4"]);
    };
    let mut c = goodput();
    base(&mut c);
    c.args(["--kv-cache-dtype", "auto,fp8", "-o"]).arg(&out).assert().success();
    let doc = read_json(&out);
    assert_valid(&doc, "FrontierResult", "plan --kv-cache-dtype auto,fp8");
    let configs = doc["configs"].as_array().unwrap();
    let ids: Vec<&str> = configs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["h100-sxm tp2x1 fp8 mbt8192", "h100-sxm tp2x1 fp8 mbt8192 kvfp8"]);
    let command = |i: usize| configs[i]["serve_command"]["command"].as_str().unwrap().to_string();
    assert_eq!(
        (configs[0]["params"]["kv_cache_dtype"].as_str(), configs[1]["params"]["kv_cache_dtype"].as_str()),
        (Some("auto"), Some("fp8"))
    );
    assert!(!command(0).contains("--kv-cache-dtype") && command(1).contains("--kv-cache-dtype fp8 "), "{}", command(1));
    let at_most_users = |i: usize| {
        let p = configs[i]["points"].as_array().unwrap().last().unwrap();
        assert_eq!(p["load"]["value"], 128, "{p}");
        p["output_tokens_per_s_per_gpu"].as_f64().unwrap()
    };
    let (wide, narrow) = (at_most_users(0), at_most_users(1));
    assert!(narrow > 1.15 * wide, "an FP8 cache of twice the tokens serves more: {narrow} against {wide}");
    let refused = |kv: &str| {
        let mut c = goodput();
        base(&mut c);
        c.args(["--kv-cache-dtype", kv]).refusal()
    };
    assert!(refused("fp8,fp8_e4m3").contains("names fp8 twice"));
    assert!(refused(",").contains("names no dtype"));
    assert!(refused("int4").contains("unknown KV-cache dtype `int4`"));
}

/// Behind TensorRT-LLM (`--serve-engine trtllm`) the plan runs
/// TensorRT-LLM's scheduler and says so, each configuration's command is a
/// script that writes trtllm-serve's options file first, a whole model's
/// replicas have none (and say why), and its grid reads each server's
/// Prometheus text where TensorRT-LLM serves it.
#[test]
fn plan_behind_tensorrt_llm_runs_its_scheduler_and_writes_its_scripts() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.toml");
    let doc = plan(
        dir.path(),
        "trtllm.json",
        &["h100=2.5"],
        2,
        &["--serve-engine", "trtllm", "--grid-out", grid.to_str().unwrap()],
    );
    assert_valid(&doc, "FrontierResult", "plan --serve-engine trtllm");
    let configs = doc["configs"].as_array().unwrap();
    assert!(configs.iter().all(|c| c["params"]["scheduler"] == "trtllm"), "{doc}");
    assert!(configs.iter().any(|c| c["params"]["dp"] == "2"), "two replicas of TP 1 among them: {doc}");
    let notes = doc["notes"].to_string();
    assert!(notes.contains("TensorRT-LLM's configurations ran TensorRT-LLM's scheduler"), "{notes}");
    for c in configs {
        let sc = &c["serve_command"];
        assert_eq!(sc["server"], "trtllm", "{c}");
        assert_eq!(sc["script"], true, "{c}");
        let command = sc["command"].as_str().unwrap();
        let fp8 = c["params"]["precision"] == "fp8";
        let weights = if fp8 { "nvidia/Llama-3.1-8B-Instruct-FP8" } else { "meta-llama/Llama-3.1-8B-Instruct" };
        assert!(command.contains(&format!("trtllm-serve {weights} --backend pytorch ")), "{command}");
        assert!(command.contains("--max_num_tokens 2048 --enable_chunked_prefill --config "), "{command}");
        // Two replicas: a server each behind SMG, predicted behind its
        // power_of_two (the plan's least-loaded on separate servers).
        if c["params"]["dp"] == "2" {
            assert!(command.contains(" --policy power_of_two "), "{command}");
            assert_eq!(c["params"]["router"], "power-of-two", "{c}");
        }
    }
    let text = std::fs::read_to_string(&grid).unwrap();
    assert!(text.contains("metrics = \"http://127.0.0.1:{port}/prometheus/metrics\""), "{text}");
    assert!(text.contains("scheduler = \"trtllm\""), "{text}");
    // The same plan behind vLLM runs vLLM's scheduler, and names none.
    let vllm = plan(dir.path(), "vllm.json", &["h100=2.5"], 2, &[]);
    assert!(vllm["configs"].as_array().unwrap().iter().all(|c| c["params"].get("scheduler").is_none()));
}

#[test]
fn fp8_on_a_gpu_without_fp8_cores_is_planned_as_vllm_runs_it_and_left_out_under_tensorrt_llm() {
    // An A100 has no FP8 cores: vLLM (and SGLang) run FP8 weights there
    // as W8A16 (FP8 Marlin kernels), and so does the plan; under
    // TensorRT-LLM it is left out, saying why.
    let dir = tempfile::tempdir().unwrap();
    let ids = |doc: &Value| -> Vec<String> {
        doc["configs"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect()
    };
    let vllm = plan(dir.path(), "vllm.json", &["a100=1.5"], 1, &[]);
    let fp8: Vec<String> = ids(&vllm).into_iter().filter(|i| i.contains(" fp8")).collect();
    assert!(!fp8.is_empty(), "{:?}", ids(&vllm));
    let notes = vllm["notes"].to_string();
    assert!(notes.contains("fp8 on a100-80gb: planned as vLLM runs it there, weight-only (W8A16"), "{notes}");
    // Its points are INT8's in all but name: the same weights' bytes, the
    // same 16-bit products.
    let int8 = plan_at(dir.path(), "int8.json", &["a100=1.5"], 1, "int8", &[]);
    let first = |doc: &Value, width: &str| -> Value {
        let c = doc["configs"].as_array().unwrap().iter().find(|c| c["id"].as_str().unwrap().contains(width)).unwrap();
        c["points"][0]["output_tokens_per_s_per_gpu"].clone()
    };
    assert!(first(&vllm, " fp8").as_f64().is_some_and(|t| t > 0.0), "{vllm}");
    assert_eq!(first(&vllm, " fp8"), first(&int8, " int8"));
    let trt = plan(dir.path(), "trt.json", &["a100=1.5"], 1, &["--serve-engine", "trtllm"]);
    assert!(ids(&trt).iter().all(|i| !i.contains(" fp8")), "{:?}", ids(&trt));
    let notes = trt["notes"].to_string();
    assert!(notes.contains("fp8 on a100-80gb: left out") && notes.contains("no FP8 tensor cores"), "{notes}");
}
