//! Quality beside speed, over real HTTP: `goodput serve --answers` answers a
//! dataset's prompts with their references and gets a known share wrong on
//! purpose; `bench --dataset` scores the answers and must recover the
//! injected rates within sampling error; `report` recomputes the scores
//! from the records alone.

use crate::cmd;
use cmd::{goodput, read_json, records, GoodputCommand};
use std::path::Path;

/// `goodput serve` with `args`: its URL, and the guard that stops it.
fn serve(args: &[&str]) -> (String, crate::cmd::Kill) {
    let (url, _, guard) = crate::cmd::serve(args);
    (url, guard)
}

/// A question-and-answer dataset of `n` entries, each answer its own.
fn dataset(dir: &Path, n: usize) -> std::path::PathBuf {
    let p = dir.join("qa.jsonl");
    let lines: Vec<String> = (0..n)
        .map(|i| format!("{{\"prompt\": \"What is item {i}?\", \"reference\": \"It is the answer numbered {i}\"}}"))
        .collect();
    std::fs::write(&p, lines.join("\n")).unwrap();
    p
}

#[test]
fn wrong_answers_injected_over_http_are_recovered_by_exact_match_and_report_recomputes_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 100);
    let (url, _server) =
        serve(&["--answers", data.to_str().unwrap(), "--fault-wrong-rate", "0.2", "--fault-seed", "4"]);
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("run.jsonl"));
    goodput()
        .args(["bench", "--url", &url, "--dataset", data.to_str().unwrap(), "-n", "600", "-c", "16", "-q"])
        .args(["--output-tokens", "64", "--slo", "exact>=0.9,rouge_l>=0.99"])
        .arg("--markdown")
        .arg(dir.path().join("run.md"))
        .arg("--html")
        .arg(dir.path().join("run.html"))
        .writing(&out, &rec)
        .assert()
        .success();
    let doc = read_json(&out);
    let q = &doc["summary"]["quality"];
    assert_eq!(q["requests_scored"], 600, "{q}");
    // 20% wrong: exact match 0.8, within 4σ (σ = √(0.16/600) ≈ 0.016).
    let exact = q["exact"]["mean"].as_f64().unwrap();
    assert!((exact - 0.8).abs() < 0.065, "{q}");
    let (lo, hi) = (q["exact"]["ci95_low"].as_f64().unwrap(), q["exact"]["ci95_high"].as_f64().unwrap());
    assert!(lo < exact && exact < hi && hi - lo < 0.1, "{q}");
    // A wrong answer is another entry's: its words mostly shared, its number not.
    assert!(q["rouge_l"]["mean"].as_f64().unwrap() > exact, "{q}");
    assert!(q["bleu"].as_f64().unwrap() > 50.0 && q["chrf_corpus"].as_f64().unwrap() > 50.0, "{q}");
    // The run-level objective fails, and goodput counts only the right answers.
    assert_eq!(doc["slo"]["quality"][0]["pass"], false);
    let good = doc["summary"]["goodput"]["good_requests"].as_u64().unwrap();
    assert_eq!(good as f64 / 600.0, exact, "rouge_l>=0.99 passes exactly the exact matches here");
    // The Markdown and HTML reports show the quality section and the verdict.
    let md = std::fs::read_to_string(dir.path().join("run.md")).unwrap();
    assert!(
        md.contains("**Quality**") && md.contains(&format!("{exact:.3} \\[")) && md.contains("| exact&gt;=0.9 | "),
        "{md}"
    );
    let page = std::fs::read_to_string(dir.path().join("run.html")).unwrap();
    assert!(
        page.contains("<h2>Quality</h2>") && page.contains(&format!("{exact:.3} [")),
        "the HTML report's quality section"
    );
    // Records keep scores and hashes, not the texts.
    let recs = records(&rec);
    assert!(recs.iter().all(|r| r.quality.is_some() && r.output_hash.is_some() && r.output_text.is_none()));
    // report recomputes the same figures from the records alone.
    let again = dir.path().join("again.json");
    goodput()
        .args(["report", out.to_str().unwrap(), "--records", rec.to_str().unwrap(), "-o", again.to_str().unwrap()])
        .assert()
        .success();
    assert_eq!(read_json(&again)["summary"]["quality"], *q);
    // … and re-judges it against another quality SLO.
    let judged = dir.path().join("judged.json");
    goodput()
        .args(["report", out.to_str().unwrap(), "--records", rec.to_str().unwrap(), "--slo", "exact>=0.5"])
        .args(["-o", judged.to_str().unwrap()])
        .assert()
        .success();
    let slo = &read_json(&judged)["slo"];
    assert_eq!((slo["pass"].as_bool(), slo["quality"][0]["measured"].as_f64()), (Some(true), Some(exact)), "{slo}");
}

#[test]
fn diverging_answers_repeated_come_back_identical_as_often_as_chance_says() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 200);
    let (url, _server) =
        serve(&["--answers", data.to_str().unwrap(), "--fault-diverge-rate", "0.3", "--fault-seed", "7"]);
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("run.jsonl"));
    goodput()
        .args(["bench", "--url", &url, "--dataset", data.to_str().unwrap(), "-n", "600", "-c", "16", "-q"])
        .args(["--output-tokens", "64", "--repeat", "3", "--keep-text", "--score", "exact,rouge-l"])
        .writing(&out, &rec)
        .assert()
        .success();
    let q = read_json(&out)["summary"]["quality"].clone();
    // 30% of answers diverge: exact match 0.7 (σ ≈ 0.019).
    assert!((q["exact"]["mean"].as_f64().unwrap() - 0.7).abs() < 0.08, "{q}");
    assert!(q.get("bleu").is_none() && q.get("chrf").is_none(), "only the scorers asked for: {q}");
    let c = &q["consistency"];
    assert_eq!((c["prompts"].as_u64(), c["repeats"].as_u64()), (Some(200), Some(3)), "{c}");
    // All three copies undiverged: 0.7³ ≈ 0.343 of 200 prompts (σ ≈ 0.034).
    let identical = c["identical_share"].as_f64().unwrap();
    assert!((identical - 0.343).abs() < 0.13, "{c}");
    assert!(c["similarity_mean"].as_f64().unwrap() > identical && c["first_difference_p50"].as_f64().is_some());
    // With --keep-text the records hold the texts, and the copies are far apart.
    let recs = records(&rec);
    let r = &recs[0];
    assert!(r.prompt_text.as_deref().unwrap().starts_with("What is item"));
    assert_eq!(r.reference.as_ref().unwrap().len(), 1);
    assert!(r.output_text.is_some());
    let copies: Vec<u64> = recs.iter().filter(|x| x.prompt_hash == r.prompt_hash).map(|x| x.id).collect();
    assert_eq!(copies.len(), 3);
    assert!(copies.iter().max().unwrap() - copies.iter().min().unwrap() >= 200, "{copies:?}");
}

#[test]
fn quality_flags_refused_where_they_cannot_apply() {
    let err = goodput().args(["estimate", "-n", "10", "--score", "exact"]).refusal();
    assert!(err.contains("--score") && err.contains("goodput bench"), "{err}");
    let err = goodput().args(["bench", "--score", "wer"]).refusal();
    assert!(err.contains("unknown scorer 'wer'"), "{err}");
    let err = goodput().args(["bench", "--score", "exact", "-n", "1"]).refusal();
    assert!(err.contains("--dataset"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.jsonl");
    std::fs::write(&plain, "{\"prompt\": \"hi\"}\n").unwrap();
    let err = goodput().args(["bench", "--score", "exact", "--dataset", plain.to_str().unwrap()]).refusal();
    assert!(err.contains("no entry") && err.contains("reference"), "{err}");
    let err = goodput().args(["serve", "--fault-wrong-rate", "0.2"]).refusal();
    assert!(err.contains("--answers"), "{err}");
    // A quality term no answer can be scored by, before the first request:
    // no references at all, or a --score list without its scorer (each had
    // passed every request).
    let err = goodput().args(["bench", "-n", "4", "--slo", "rouge_l>=0.5"]).refusal();
    assert!(err.contains("--slo rouge_l>=0.5") && err.contains("--dataset"), "{err}");
    let data = dataset(dir.path(), 4);
    let err = goodput()
        .args(["bench", "-n", "4", "--score", "exact", "--slo", "rouge_l>=0.99,chrf>=99", "--dataset"])
        .arg(&data)
        .refusal();
    assert!(err.contains("needs the rouge-l scorer, which --score leaves out"), "{err}");
    // A live sweep the same; the simulated engine writes no answers at all.
    let err = goodput().args(["sweep", "--concurrency", "1", "-n", "4", "--slo", "rouge_l>=0.5"]).refusal();
    assert!(err.contains("--slo rouge_l>=0.5") && err.contains("--dataset"), "{err}");
    for args in [
        &["estimate", "-n", "4"][..],
        &["sweep", "--estimate", "--concurrency", "1", "-n", "4"][..],
        &["plan", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1"][..],
    ] {
        let err = goodput().args(args).args(["--slo", "ttft<=1s,exact>=0.5"]).refusal();
        assert!(err.contains("--slo exact>=0.5") && err.contains("writes no answers"), "{args:?}: {err}");
    }
}

#[test]
fn compare_pairs_answers_by_prompt_and_fails_on_an_answer_regression() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(dir.path(), 100);
    let run = |name: &str, wrong: &str| {
        let (url, _server) = serve(&["--answers", data.to_str().unwrap(), "--fault-wrong-rate", wrong]);
        let (out, rec) = (dir.path().join(format!("{name}.json")), dir.path().join(format!("{name}.jsonl")));
        goodput()
            .args(["bench", "--url", &url, "--dataset", data.to_str().unwrap(), "-n", "400", "-c", "8", "-q"])
            .args(["--output-tokens", "64", "--label", name])
            .writing(&out, &rec)
            .assert()
            .success();
        (out, rec)
    };
    let (a, ra) = run("fp16", "0");
    let (b, rb) = run("fp8", "0.2");
    let (cmp, cmp_md) = (dir.path().join("cmp.json"), dir.path().join("cmp.md"));
    let o = goodput()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--fail-if", "quality.exact<-0.02"])
        .args(["--records", ra.to_str().unwrap(), "--records", rb.to_str().unwrap(), "-o", cmp.to_str().unwrap()])
        .arg("--markdown")
        .arg(&cmp_md)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "the answer regression fails the gate: {said}");
    assert!(said.contains("answers on the same prompts") && said.contains("FAIL"), "{said}");
    let md = std::fs::read_to_string(&cmp_md).unwrap();
    assert!(md.contains("**Answers on the same prompts") && md.contains("| exact match |"), "{md}");
    let c = read_json(&cmp);
    let ans = &c["answers"][0];
    assert_eq!(ans["pairs"], 400, "{ans}");
    // 20% of the second run's answers are wrong: about 80% identical, exact down 0.2.
    assert!((ans["identical_share"].as_f64().unwrap() - 0.8).abs() < 0.08, "{ans}");
    let e = &ans["exact"];
    assert!((e["change"].as_f64().unwrap() + 0.2).abs() < 0.08 && e["ci95_high"].as_f64().unwrap() < 0.0, "{e}");
    // The same run against itself: every answer identical, and the gate holds.
    goodput()
        .args(["compare", a.to_str().unwrap(), a.to_str().unwrap(), "--fail-if", "quality.exact<-0.02"])
        .args(["--records", ra.to_str().unwrap(), "--records", ra.to_str().unwrap()])
        .assert()
        .success();
    let err = goodput()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--records", ra.to_str().unwrap()])
        .refusal();
    assert!(err.contains("one records file per run"), "{err}");
}
