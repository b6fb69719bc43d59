//! `--runs N`: the whole measurement repeated, each run kept in the
//! document's `repeats` block with each headline figure's spread; the top
//! level is the first run.

use crate::cmd::*;
use std::time::Duration;

fn spread<'a>(v: &'a serde_json::Value, figure: &str) -> &'a serde_json::Value {
    v["repeats"]["spread"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["figure"] == figure)
        .unwrap_or_else(|| panic!("no spread of {figure}: {}", v["repeats"]))
}

/// Three runs against the embedded fixed-timing server: three runs kept,
/// with consecutive seeds and their own run ids; the top level (and
/// --records) is the first run; every format shows the runs.
#[test]
fn bench_runs_three_times_and_keeps_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec, csv, md) =
        (dir.path().join("r.json"), dir.path().join("r.jsonl"), dir.path().join("csv"), dir.path().join("r.md"));
    let html = dir.path().join("r.html");
    let o = goodput()
        .args(["bench", "-n", "6", "-c", "2", "--seed", "40", "--runs", "3"])
        .args(FAST)
        .writing(&out, &rec)
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains("spread over 3 runs"), "{text}");
    let v = read_json(&out);
    let rep = &v["repeats"];
    assert_eq!((rep["n"].as_u64(), rep["asked"].as_u64()), (Some(3), Some(3)));
    assert_eq!(rep["seeds"], serde_json::json!([40, 41, 42]));
    assert_eq!(v["config"]["load"]["seed"], 40, "the top level is the first run");
    let runs = rep["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3);
    let ids: std::collections::BTreeSet<&str> = runs.iter().map(|r| r["run_id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 3, "each run has its own id: {ids:?}");
    assert_eq!(runs[0]["run_id"], v["run_id"]);
    for (i, r) in runs.iter().enumerate() {
        assert_eq!(r["index"], i + 1);
        assert_eq!(r["seed"], 40 + i);
        assert_eq!(r["completed"], 6, "{r}");
        assert!(r["figures"]["ttft_ms.p50"].as_f64().unwrap() >= 20.0, "{r}");
    }
    // The spread of TTFT's median over the three: the runs' own values.
    let s = spread(&v, "ttft_ms.p50");
    assert_eq!(s["n"], 3);
    let vals: Vec<f64> = runs.iter().map(|r| r["figures"]["ttft_ms.p50"].as_f64().unwrap()).collect();
    let mean = vals.iter().sum::<f64>() / 3.0;
    assert!((s["mean"].as_f64().unwrap() - mean).abs() < 1e-9, "{s}");
    assert_eq!(s["min"].as_f64().unwrap(), vals.iter().copied().fold(f64::INFINITY, f64::min));
    let (lo, hi) = (s["lo"].as_f64().unwrap(), s["hi"].as_f64().unwrap());
    assert!(lo <= mean && mean <= hi, "{s}");
    // --records holds the first run's records, as its id says.
    let recs = records(&rec);
    assert_eq!(recs.len(), 6);
    let head = std::fs::read_to_string(&rec).unwrap();
    assert!(head.contains(v["run_id"].as_str().unwrap()));
    // A row per run in CSV; the spread in Markdown; the runs side by side in HTML.
    let rows = std::fs::read_to_string(csv.join("runs.csv")).unwrap();
    assert_eq!(rows.lines().count(), 4, "{rows}");
    assert!(rows.lines().next().unwrap().starts_with("run,seed,run_id"), "{rows}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("spread over 3 runs"));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("run 3 (seed 42)") && page.contains("spread over 3 runs"));
    // report renders the saved document's spread again.
    let again = goodput().arg("report").arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&again.stdout).contains("spread over 3 runs"));
    // Re-analysed from the first run's records, the block is carried as measured, and says so.
    let rejudged = dir.path().join("rejudged.json");
    goodput()
        .arg("report")
        .arg(&out)
        .arg("--records")
        .arg(&rec)
        .args(["--slo", "ttft<=1s", "-o"])
        .arg(&rejudged)
        .assert()
        .success();
    let w = read_json(&rejudged);
    assert_eq!(w["repeats"]["runs"], v["repeats"]["runs"]);
    assert!(w["repeats"]["notes"].to_string().contains("as first analysed"), "{}", w["repeats"]);
}

/// --same-seed: every run sends the same prompts on the same schedule.
#[test]
fn bench_same_seed_repeats_one_seed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    goodput()
        .args(["bench", "-q", "-n", "4", "-c", "2", "--seed", "7", "--runs", "2", "--same-seed"])
        .args(FAST)
        .arg("-o")
        .arg(&out)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let v = read_json(&out);
    assert_eq!(v["repeats"]["seeds"], serde_json::json!([7, 7]));
    assert_eq!(v["repeats"]["same_seed"], true);
}

/// --runs repeats a whole run: a shard of one, or one run's live metrics
/// endpoint, are refused with the reason.
#[test]
fn bench_runs_refuses_shards_and_a_live_endpoint() {
    let err = goodput()
        .args(["bench", "-n", "4", "--runs", "2", "--shard", "0/2", "--seed", "1", "-o", "x.json"])
        .args(["--include-requests"])
        .args(FAST)
        .timeout(Duration::from_secs(20))
        .refusal();
    assert!(err.contains("--runs 2") && err.contains("--shard 0/2"), "{err}");
    let err = goodput()
        .args(["bench", "-n", "4", "--runs", "2", "--prometheus-listen", "127.0.0.1:0"])
        .args(FAST)
        .timeout(Duration::from_secs(20))
        .refusal();
    assert!(err.contains("--prometheus-listen"), "{err}");
}

/// estimate --runs: in virtual time the runs differ by what their seeds
/// draw; with fixed lengths and the engine's noise off they cannot differ,
/// and the block says so; a calibration with step-time noise makes them
/// differ.
#[test]
fn estimate_runs_differ_by_seed_and_noise_and_say_when_they_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let est = |name: &str, extra: &[&str]| {
        let p = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "-n", "40", "-c", "8", "--output-tokens", "32", "--runs", "3"])
            .args(extra)
            .arg("-o")
            .arg(&p)
            .assert()
            .success();
        read_json(&p)
    };
    let drawn = est("drawn.json", &["--input-tokens", "uniform:64..512"]);
    assert_eq!(drawn["repeats"]["seeds"], serde_json::json!([0, 1, 2]));
    assert!(spread(&drawn, "e2e_ms.p50")["sd"].as_f64().unwrap() > 0.0, "{}", drawn["repeats"]);

    let fixed = est("fixed.json", &["--input-tokens", "256"]);
    let notes = fixed["repeats"]["notes"].to_string();
    assert!(notes.contains("every run gave the same figures") && notes.contains("noise is off"), "{notes}");
    assert!(spread(&fixed, "e2e_ms.p50")["sd"].as_f64().unwrap() < 1e-9);

    let cal = dir.path().join("noise.json");
    std::fs::write(&cal, r#"{"step_time_cv": 0.1}"#).unwrap();
    let noisy = est("noisy.json", &["--input-tokens", "256", "--calibration", cal.to_str().unwrap()]);
    assert!(spread(&noisy, "e2e_ms.p50")["sd"].as_f64().unwrap() > 0.0, "{}", noisy["repeats"]);
    assert!(!noisy["repeats"]["notes"].to_string().contains("noise is off"));
}

/// sweep --runs: each point repeated at its load, each repeat with the
/// next of the sweep's seeds (or its first run's, with --same-seed), and
/// the point's result is its first run; stages are refused.
#[test]
fn sweep_repeats_each_point() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |name: &str, extra: &[&str]| {
        let p = dir.path().join(name);
        goodput()
            .args(["sweep", "--estimate", "-q", "--concurrency", "1,4", "-n", "24"])
            .args(["--input-tokens", "uniform:64..512", "--output-tokens", "16", "--runs", "2"])
            .args(extra)
            .arg("-o")
            .arg(&p)
            .assert()
            .success();
        read_json(&p)
    };
    let (html, md) = (dir.path().join("sw.html"), dir.path().join("sw.md"));
    let csv = dir.path().join("csv");
    let v = sweep(
        "sw.json",
        &["--html", html.to_str().unwrap(), "--markdown", md.to_str().unwrap(), "--csv", csv.to_str().unwrap()],
    );
    let rows = std::fs::read_to_string(csv.join("runs.csv")).unwrap();
    assert_eq!(rows.lines().count(), 5, "a row per run of each of two points: {rows}");
    assert!(rows.starts_with("point,load_kind,load_value,run,seed"), "{rows}");
    for page in [&html, &md] {
        let text = std::fs::read_to_string(page).unwrap();
        assert!(text.contains("spread over 2 runs a point") && text.contains("concurrency 4 "), "{text}");
    }
    assert!(std::fs::read_to_string(&html).unwrap().contains("concurrency 4 (2 runs)"));
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    let mut all = std::collections::BTreeSet::new();
    for p in points {
        let rep = &p["result"]["repeats"];
        assert_eq!(rep["n"], 2, "{rep}");
        let seeds = rep["seeds"].as_array().unwrap();
        assert_eq!(p["result"]["config"]["load"]["seed"], seeds[0], "the point is its first run");
        all.extend(seeds.iter().map(|s| s.as_u64().unwrap()));
        assert_eq!(rep["runs"][1]["completed"], 24, "{rep}");
    }
    assert_eq!(all.len(), 4, "every run of every point drew its own seed: {all:?}");

    let same = sweep("same.json", &["--same-seed"]);
    for p in same["points"].as_array().unwrap() {
        let seeds = &p["result"]["repeats"]["seeds"];
        assert_eq!(seeds[0], seeds[1], "{seeds}");
    }

    let err = goodput()
        .args(["sweep", "--estimate", "--stages", "c=1/2s,c=2/2s", "--runs", "2"])
        .timeout(Duration::from_secs(20))
        .refusal();
    assert!(err.contains("--runs 2") && err.contains("--stages"), "{err}");
}

/// compare reads both runs' records (--records) and tests their TTFT on
/// the requests themselves: two estimates of one setting with different
/// seeds are called the same, and the same load at a higher concurrency
/// different (on its widened interval: its users moved in waves).
#[test]
fn compare_with_records_tests_the_requests() {
    let dir = tempfile::tempdir().unwrap();
    let est = |name: &str, seed: &str, c: &str| {
        let (out, rec) = (dir.path().join(format!("{name}.json")), dir.path().join(format!("{name}.jsonl")));
        goodput()
            .args(["estimate", "-q", "-n", "200", "-c", c, "--seed", seed])
            .args(["--input-tokens", "uniform:128..1024", "--output-tokens", "uniform:16..64"])
            .writing(&out, &rec)
            .assert()
            .success();
        (out, rec)
    };
    let (a, b, busy) = (est("a", "1", "8"), est("b", "2", "8"), est("busy", "2", "32"));
    let cmp = |x: &(std::path::PathBuf, std::path::PathBuf), y: &(std::path::PathBuf, std::path::PathBuf)| {
        let out = dir.path().join("cmp.json");
        let o = goodput()
            .arg("compare")
            .arg(&x.0)
            .arg(&y.0)
            .arg("--records")
            .arg(&x.1)
            .arg("--records")
            .arg(&y.1)
            .args(["--fail-if", "ttft_ms.p50>+10%!", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        (o.status.code(), read_json(&out))
    };
    let row = |v: &serde_json::Value| {
        v["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "ttft_ms.p50").unwrap()["significance"][1].clone()
    };
    let (code, same) = cmp(&a, &b);
    let s = row(&same);
    assert_eq!(s["test"], "Mann–Whitney U on per-request values", "{s}");
    assert_eq!(s["call"], "not_shown", "{s}");
    assert_eq!(code, Some(0), "{}", same["verdicts"]);
    // The 32 users of the busy run, sent together, move in waves: its
    // TTFTs depend on their neighbours and its p50's interval was widened,
    // so the median is tested on the widened intervals, not on the records
    // (whose tests take the requests as independent), and still called.
    let (code, worse) = cmp(&a, &busy);
    let s = row(&worse);
    assert_eq!((s["test"].as_str(), s["call"].as_str()), (Some("difference of percentiles"), Some("different")), "{s}");
    assert!(s["reason"].as_str().unwrap().contains("(the run's requests depended on their neighbours"), "{s}");
    assert_eq!(code, Some(1), "{}", worse["verdicts"]);
}

/// SIGTERM during the first of three runs: no further run starts, the
/// document holds the run made (marked interrupted, with a note that one
/// of three was made), and the exit status says it was cut short.
#[cfg(unix)]
#[test]
fn a_stopped_repeat_writes_the_runs_made_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("t.json"), dir.path().join("t.jsonl"));
    let mut child = goodput_child()
        .args(["bench", "-q", "-c", "4", "--duration", "10m", "--grace", "300ms", "--runs", "3"])
        .args(["--sim-profile", "fixed", "--sim-ttft", "20ms", "--sim-itl", "20ms", "--output-tokens", "10"])
        .arg("-o")
        .arg(&out)
        .arg("--records")
        .arg(&rec)
        .spawn()
        .unwrap();
    let waited = std::time::Instant::now();
    while std::fs::read_to_string(&rec).map_or(0, |t| t.lines().count()) < 4 {
        assert!(waited.elapsed() < Duration::from_secs(60), "no records after a minute");
        assert!(child.try_wait().unwrap().is_none(), "the run ended by itself");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let stopped = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(stopped.elapsed() < Duration::from_secs(30), "still running 30 s after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("stopping the runs (SIGTERM)"), "{stderr}");
    let v = read_json(&out);
    assert_eq!(v["interrupted"], true);
    let rep = &v["repeats"];
    assert_eq!((rep["n"].as_u64(), rep["asked"].as_u64()), (Some(1), Some(3)), "{rep}");
    assert_eq!(rep["runs"][0]["interrupted"], true);
    let notes = rep["notes"].to_string();
    assert!(notes.contains("1 of the 3 runs asked were made") && notes.contains("stopped"), "{notes}");
}

/// compare of two documents of --runs N: the figures are the runs' means,
/// tested by Welch's t on the runs' values, and the comparison says so.
#[test]
fn compare_reads_repeated_runs_as_their_means() {
    let dir = tempfile::tempdir().unwrap();
    let est = |name: &str, seed: &str| {
        let p = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "-n", "40", "-c", "8", "--seed", seed, "--runs", "3"])
            .args(["--input-tokens", "uniform:64..512", "--output-tokens", "16"])
            .arg("-o")
            .arg(&p)
            .assert()
            .success();
        p
    };
    let (a, b) = (est("a.json", "1"), est("b.json", "50"));
    let out = dir.path().join("cmp.json");
    goodput().arg("compare").arg(&a).arg(&b).arg("-o").arg(&out).assert().success();
    let c = read_json(&out);
    assert!(c["note"].as_str().unwrap().contains("mean over its runs"), "{}", c["note"]);
    let row = c["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "e2e_ms.p50").unwrap();
    let mean =
        read_json(&a)["repeats"]["spread"].as_array().unwrap().iter().find(|s| s["figure"] == "e2e_ms.p50").unwrap()
            ["mean"]
            .clone();
    assert_eq!(row["values"][0], mean);
    assert_eq!(row["significance"][1]["test"], "Welch's t on the runs' values", "{row}");
}

/// A blank label (an edited document's `""`) does not name its run in a
/// comparison: the file's name does, as for a run without a label (the
/// baseline column had been headed by nothing).
#[test]
fn compare_names_a_run_with_a_blank_label_by_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (dir.path().join("a.json"), dir.path().join("b.json"), dir.path().join("c.json"));
    for (p, seed) in [(&a, "1"), (&b, "2")] {
        goodput().args(["estimate", "-q", "-n", "5", "--seed", seed, "-o"]).arg(p).assert().success();
    }
    let mut doc = read_json(&a);
    doc["config"]["label"] = serde_json::json!(" ");
    std::fs::write(&a, serde_json::to_string(&doc).unwrap()).unwrap();
    goodput().arg("compare").arg(&a).arg(&b).arg("-o").arg(&out).assert().success();
    let labels = read_json(&out)["labels"].clone();
    assert_eq!(labels, serde_json::json!(["a.json", "b.json"]), "{labels}");
}

/// A sweep judged by an attainment target below the default 0.9 (session
/// 44): every format judges each point by the sweep's own target, as
/// its analysis does. A point with 40% ≤ attainment < 90% that the sweep
/// recommended had been marked "missed" in Markdown and HTML, and
/// `meets_slo=false` in CSV, by a 0.9 hard-coded there.
#[test]
fn a_sweep_point_is_judged_by_the_sweeps_own_attainment_target_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = |name: &str, extra: &[&str]| {
        let p = dir.path().join(name);
        goodput()
            .args(["sweep", "--estimate", "-q", "--progress", "none", "--concurrency", "8,32", "-n", "200"])
            .args(["--seed", "5"])
            .args(extra)
            .arg("-o")
            .arg(&p)
            .assert()
            .success();
        read_json(&p)
    };
    // The limit from the busier point's own TTFT, between its median and
    // its p90: some of its requests meet it, not 90% of them.
    let bare = sweep("bare.json", &[]);
    let ttft = &bare["points"][1]["result"]["summary"]["ttft_ms"];
    let limit = (ttft["p50"].as_f64().unwrap() + ttft["p90"].as_f64().unwrap()) / 2.0;
    let slo = format!("ttft<={limit:.3}ms");
    let v = sweep("s.json", &["--slo", &slo, "--attainment", "0.4"]);
    assert_eq!(v["config"]["attainment_target"], 0.4);
    let meets = |p: &serde_json::Value| {
        p["result"]["slo"]["pass"] == true
            && p["result"]["summary"]["goodput"]["slo_attainment"].as_f64().unwrap() >= 0.4
    };
    let points = v["points"].as_array().unwrap();
    let between = points.iter().position(|p| {
        let a = p["result"]["summary"]["goodput"]["slo_attainment"].as_f64().unwrap();
        meets(p) && a < 0.9
    });
    let Some(between) = between else { panic!("no point met {slo} with less than 90% attainment: {v}") };
    assert_eq!(v["analysis"]["recommended"]["index"], between, "{}", v["analysis"]);

    let (md, html, csv) = (dir.path().join("r.md"), dir.path().join("r.html"), dir.path().join("csv"));
    goodput()
        .arg("report")
        .arg(dir.path().join("s.json"))
        .arg("-q")
        .arg("--markdown")
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .arg("--csv")
        .arg(&csv)
        .assert()
        .success();
    let rows = std::fs::read_to_string(csv.join("points.csv")).unwrap();
    let head: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let col = head.iter().position(|h| *h == "meets_slo").unwrap();
    for (p, line) in points.iter().zip(rows.lines().skip(1)) {
        assert_eq!(line.split(',').nth(col), Some(if meets(p) { "true" } else { "false" }), "{rows}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    let row = md.lines().find(|l| l.contains("**(recommended)**")).unwrap();
    assert!(row.contains("✅ met") && !row.contains("missed"), "{row}");
    let html = std::fs::read_to_string(&html).unwrap();
    let at = html.find(r#"<span class="tag info">recommended</span></td>"#).unwrap();
    let row = &html[at..at + html[at..].find("</tr>").unwrap()];
    assert!(row.contains(r#"<span class="better">met</span>"#) && !row.contains("missed"), "{row}");
}

/// Runs judged by different SLOs (session 44): their goodput and
/// attainment count requests by different limits, so the comparison says
/// so, shows no change in them, and leaves a --fail-if rule on them
/// unjudged with how to judge both alike; figures the SLO does not touch
/// are compared and gated as ever. Goodput -96% had been a regression.
#[test]
fn compare_does_not_judge_goodput_across_different_slos() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, slo: &str| {
        let p = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "-n", "100", "-c", "8", "--seed", "3", "--slo", slo, "-o"])
            .arg(&p)
            .assert()
            .success();
        p
    };
    let (a, b) = (run("a.json", "ttft<=10s"), run("b.json", "ttft<=1ms"));
    let out = dir.path().join("c.json");
    let o = goodput()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--fail-if", "goodput<-5%,output_tokens_per_s<-50%", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "an unjudged rule does not pass: {text}");
    assert!(text.contains("judged by different SLOs") && text.contains("--slo SPEC"), "{text}");
    assert!(!text.contains("FAIL "), "no rule failed: {text}");
    let c = read_json(&out);
    let row = |m: &str| c["rows"].as_array().unwrap().iter().find(|r| r["metric"] == m).unwrap().clone();
    let goodput_row = row("goodput.requests_per_s");
    assert!(goodput_row["values"][1].as_f64().unwrap() < goodput_row["values"][0].as_f64().unwrap());
    assert_eq!(goodput_row["changes"][1], serde_json::Value::Null, "{goodput_row}");
    assert_eq!(goodput_row["other_slo"], serde_json::json!([1]), "{goodput_row}");
    assert!(row("throughput.output_tokens_per_s")["changes"][1].is_number());
    let verdicts = c["verdicts"].as_array().unwrap();
    assert_eq!(verdicts[0]["verdict"], "unjudged", "{}", verdicts[0]);
    assert!(verdicts[0]["reason"].as_str().unwrap().starts_with("not comparable"), "{}", verdicts[0]);
    assert_eq!(verdicts[1]["verdict"], "pass", "{}", verdicts[1]);
    // One SLO for both: goodput compared and gated again.
    let same = run("same.json", "ttft<=10s");
    goodput().arg("compare").arg(&a).arg(&same).args(["--fail-if", "goodput<-5%"]).assert().success();
    // The same limits in another order, or with another share asked of
    // them, count requests alike: not another SLO (they had read as one).
    let (c1, c2) = (run("c1.json", "ttft<=10s,tpot<=1s"), run("c2.json", "tpot<=1s, ttft<=10s,attainment>=50%"));
    goodput().arg("compare").arg(&c1).arg(&c2).args(["--fail-if", "goodput<-5%"]).assert().success();
}

/// `compare --slo SPEC` judges every run again by the one SLO, from each
/// run's records (beside it by name, or `--records` in the runs' order),
/// as `report RUN.json --slo SPEC` does: the runs' attainment, goodput and
/// verdicts are then those `report` gives, their changes are compared
/// (the attainment's in points) and a rule on goodput judged, with no
/// note of other SLOs. A run without records is refused, naming it and
/// where its records could come from.
#[test]
fn compare_judges_every_run_again_by_one_slo() {
    let dir = tempfile::tempdir().unwrap();
    let estimate = |name: &str, slo: &str, conc: &str, records: Option<&str>| {
        let p = dir.path().join(name);
        let mut cmd = goodput();
        cmd.args(["estimate", "-q", "-n", "100", "-c", conc, "--seed", "3", "--slo", slo, "-o"]).arg(&p);
        if let Some(r) = records {
            cmd.arg("--records").arg(dir.path().join(r));
        }
        cmd.assert().success();
        p
    };
    // Judged by different SLOs, at different loads; their records beside
    // them (a.jsonl), or elsewhere (b-records.jsonl).
    let a = estimate("a.json", "ttft<=10s", "4", Some("a.jsonl"));
    let b = estimate("b.json", "ttft<=1ms", "32", Some("b-records.jsonl"));
    const SPEC: &str = "ttft<=150ms";
    let judged = |run: &std::path::Path, records: &str, name: &str| {
        let out = dir.path().join(name);
        goodput()
            .arg("report")
            .arg(run)
            .arg("--records")
            .arg(dir.path().join(records))
            .args(["--slo", SPEC, "-q", "-o"])
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let (ra, rb) = (judged(&a, "a.jsonl", "a-judged.json"), judged(&b, "b-records.jsonl", "b-judged.json"));
    let attainment = |v: &serde_json::Value| v["summary"]["goodput"]["slo_attainment"].as_f64().unwrap();
    assert_ne!(attainment(&ra), attainment(&rb), "the fixture: the loads meet the SLO differently");

    let (out, md) = (dir.path().join("c.json"), dir.path().join("c.md"));
    let o = goodput()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .args(["--slo", SPEC, "--records"])
        .arg(dir.path().join("a.jsonl"))
        .arg("--records")
        .arg(dir.path().join("b-records.jsonl"))
        .args(["--fail-if", "goodput<-1000%", "-o"])
        .arg(&out)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{text}");
    let c = read_json(&out);
    // One SLO: nothing to note of SLOs. (The estimates' users were sent
    // together and moved in lockstep, which the note may say.)
    let note = c["note"].as_str().unwrap_or_default();
    assert!(!note.contains("SLO") && !note.contains("judged by"), "one SLO: nothing to note of SLOs: {note}");
    let row = |m: &str| c["rows"].as_array().unwrap().iter().find(|r| r["metric"] == m).unwrap().clone();
    let att = row("goodput.slo_attainment");
    assert_eq!(att["values"], serde_json::json!([attainment(&ra), attainment(&rb)]), "{att}");
    assert_eq!(att["changes_pp"][1].as_f64(), Some((attainment(&rb) - attainment(&ra)) * 100.0), "{att}");
    assert!(att.get("other_slo").is_none(), "{att}");
    let good = row("goodput.requests_per_s");
    let goodput_of = |v: &serde_json::Value| v["summary"]["goodput"]["requests_per_s"].clone();
    assert_eq!(good["values"], serde_json::json!([goodput_of(&ra), goodput_of(&rb)]), "{good}");
    assert!(good["changes"][1].is_number(), "{good}");
    for (i, (r, was)) in [(&ra, "ttft<=10s"), (&rb, "ttft<=1ms")].into_iter().enumerate() {
        assert_eq!(c["slo"][i]["spec"], SPEC, "{}", c["slo"]);
        assert_eq!(c["slo"][i]["pass"], r["slo"]["pass"], "{}", c["slo"]);
        // The document says its verdicts are --slo's, and what each run's own was.
        assert_eq!(c["slo"][i]["judged_again"], true, "{}", c["slo"]);
        assert_eq!(c["slo"][i]["saved_spec"], was, "{}", c["slo"]);
    }
    assert_eq!(c["verdicts"][0]["verdict"], "pass", "{}", c["verdicts"]);
    assert!(text.contains(&format!("SLO verdict of each run, by '{SPEC}':")), "{text}");
    // A failing run's misses are broken at 80 columns (b's ran to 84).
    let verdicts: Vec<&str> =
        text.lines().skip_while(|l| !l.starts_with("SLO verdict of each run")).take_while(|l| !l.is_empty()).collect();
    assert!(verdicts.iter().any(|l| l.contains("FAIL")), "{verdicts:?}");
    assert!(verdicts.iter().all(|l| l.chars().count() <= 80), "{verdicts:#?}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| SLO attainment |") && md.contains("| SLO verdict |"), "{md}");

    // Without --records, the records each run names (b's by another name).
    let o = goodput().arg("compare").arg(&a).arg(&b).args(["--slo", SPEC, "-o"]).arg(&out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success() && err.contains("b-records.jsonl"), "{err}");
    assert_eq!(read_json(&out)["rows"], c["rows"], "the same records, the same comparison");
    // Moved away, b's are neither where it names them nor beside it: it is
    // refused, named, with where its records could come from.
    std::fs::rename(dir.path().join("b-records.jsonl"), dir.path().join("moved.jsonl")).unwrap();
    let err = goodput().arg("compare").arg(&a).arg(&b).args(["--slo", SPEC]).refusal();
    assert!(
        err.contains(&format!("--slo '{SPEC}' judges every run again from its records, and {}", b.display())),
        "{err}"
    );
    assert!(err.contains("give --records once for each run") && err.contains("b.jsonl"), "{err}");
    assert!(err.contains("b-records.jsonl"), "{err}");
    std::fs::rename(dir.path().join("moved.jsonl"), dir.path().join("b.jsonl")).unwrap();
    let o = goodput().arg("compare").arg(&a).arg(&b).args(["--slo", SPEC, "-o"]).arg(&out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stderr).contains("reading the run's records from"));
    assert_eq!(read_json(&out)["rows"], c["rows"], "the same records, the same comparison");
    // Without --slo, each run keeps its own, and the note says so.
    let o = goodput().arg("compare").arg(&a).arg(&b).args(["-o"]).arg(&out).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stdout).contains("judged by different SLOs"));
    let own = read_json(&out)["slo"].clone();
    assert!(own[0].get("judged_again").is_none() && own[1].get("saved_spec").is_none(), "{own}");
    assert_eq!(own[1]["spec"], "ttft<=1ms", "{own}");
    // A bad SLO is refused by clap, naming the flag.
    let err = goodput().arg("compare").arg(&a).arg(&b).args(["--slo", "ttft<=fast"]).refusal();
    assert!(err.contains("--slo"), "{err}");
}

/// Documents of `--runs 2` judged again by `compare --slo` (or `report
/// --slo`): their other runs kept figures, not records, so goodput and the
/// attainment are run 1's judged anew, and the repeats block says why; the
/// figures no SLO counts are still the runs' means. The runs' goodput
/// under the SLO they were judged by had been read as their means under
/// the new one.
#[test]
fn compare_slo_reads_repeated_runs_goodput_from_run_1_judged_anew() {
    let dir = tempfile::tempdir().unwrap();
    let estimate = |name: &str, conc: &str| {
        let p = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "-n", "40", "-c", conc, "--seed", "3", "--runs", "2", "--slo", "ttft<=10s"])
            .arg("-o")
            .arg(&p)
            .arg("--records")
            .arg(p.with_extension("jsonl"))
            .assert()
            .success();
        p
    };
    let (a, b) = (estimate("a.json", "4"), estimate("b.json", "32"));
    const SPEC: &str = "ttft<=150ms";
    let judged = |run: &std::path::Path| {
        let out = run.with_extension("judged.json");
        goodput().arg("report").arg(run).args(["--slo", SPEC, "-q", "-o"]).arg(&out).assert().success();
        read_json(&out)
    };
    let (ja, jb) = (judged(&a), judged(&b));
    let figures: Vec<&str> =
        ja["repeats"]["spread"].as_array().unwrap().iter().map(|s| s["figure"].as_str().unwrap()).collect();
    assert!(figures.contains(&"throughput.output_tokens_per_s"), "{figures:?}");
    for gone in ["goodput.requests_per_s", "goodput.slo_attainment"] {
        assert!(!figures.contains(&gone), "{gone} in {figures:?}");
        assert!(ja["repeats"]["runs"][1]["figures"].get(gone).is_none(), "{}", ja["repeats"]["runs"][1]);
    }
    assert!(ja["repeats"]["notes"].to_string().contains("left out of the runs' figures"), "{}", ja["repeats"]["notes"]);
    // Judged by the SLO it was: the runs' figures are kept whole.
    let same = a.with_extension("same.json");
    goodput().arg("report").arg(&a).args(["--slo", "ttft<=10000ms", "-q", "-o"]).arg(&same).assert().success();
    assert!(read_json(&same)["repeats"]["spread"].to_string().contains("goodput.requests_per_s"));

    let out = dir.path().join("c.json");
    goodput().arg("compare").arg(&a).arg(&b).args(["--slo", SPEC, "-o"]).arg(&out).assert().success();
    let c = read_json(&out);
    assert!(c["note"].as_str().unwrap_or_default().contains("every document holds repeated runs"), "{}", c["note"]);
    let row = |m: &str| c["rows"].as_array().unwrap().iter().find(|r| r["metric"] == m).unwrap().clone();
    for (metric, field) in [("goodput.requests_per_s", "requests_per_s"), ("goodput.slo_attainment", "slo_attainment")]
    {
        let top = |j: &serde_json::Value| j["summary"]["goodput"][field].clone();
        assert_eq!(row(metric)["values"], serde_json::json!([top(&ja), top(&jb)]), "{metric}");
    }
    let mean = |j: &serde_json::Value| {
        j["repeats"]["spread"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["figure"] == "throughput.output_tokens_per_s")
            .unwrap()["mean"]
            .clone()
    };
    assert_eq!(row("throughput.output_tokens_per_s")["values"], serde_json::json!([mean(&ja), mean(&jb)]));
}

/// `--runs 3` against one `goodput serve`, whose prefix cache outlives a
/// run, with `extra`: the document.
fn runs_on_one_server(extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json");
    let (url, _, _server) = serve(&["--host", "127.0.0.1", "--speed", "10"]);
    goodput()
        .args(["bench", "-q", "--url", &url, "--metrics-interval", "200ms", "-n", "8", "-c", "2"])
        .args(["--input-tokens", "400", "--output-tokens", "8", "--seed", "77", "--runs", "3"])
        .args(extra)
        .arg("-o")
        .arg(&out)
        .timeout(Duration::from_secs(120))
        .assert()
        .success();
    read_json(&out)
}

/// `--runs 3 --same-seed` against a server with a prefix cache: runs 2 and
/// 3 send run 1's prompts again, and the cache serves them. The repeats
/// block and the warnings name those runs and the fix; only run 1's
/// warnings had been kept, and the cache's speed-up was read as run-to-run
/// spread without a word. With a seed of its own for each run, nothing is
/// said.
#[test]
fn same_seed_runs_served_from_an_earlier_runs_cache_are_warned_of() {
    let hits = |v: &serde_json::Value| v["server_signals"]["window"]["prefix_cache_hit_rate"].clone();
    let v = runs_on_one_server(&["--same-seed"]);
    let notes = v["repeats"]["notes"].to_string();
    assert!(notes.contains("runs 2 and 3 of --runs found the server's prefix cache holding their prompts"), "{notes}");
    assert!(notes.contains("leave --same-seed out"), "{notes}");
    let warned =
        |v: &serde_json::Value| v["warnings"].to_string().contains("of --runs found the server's prefix cache");
    assert!(warned(&v), "{}", v["warnings"]);
    // Run 1, the top level, met an empty cache: its own check passed it.
    assert!(!v["warnings"].to_string().contains("held them before the run"), "{} ({})", v["warnings"], hits(&v));
    let fresh = runs_on_one_server(&[]);
    assert_eq!(fresh["repeats"]["seeds"], serde_json::json!([77, 78, 79]));
    assert!(!warned(&fresh), "each run its own prompts: {} ({})", fresh["warnings"], hits(&fresh));
    assert!(!fresh["repeats"]["notes"].to_string().contains("prefix cache"), "{}", fresh["repeats"]["notes"]);
}

/// Saved runs against one `goodput serve`, whose prefix cache outlives a
/// run: `compare` names the runs whose prompts an earlier run had put in
/// the cache (`--runs --same-seed`'s later runs, and a run of a seed sent
/// before) and says their latency gains may be the cache's, in the
/// terminal, the JSON and the Markdown; a run of fresh prompts is not
/// named. Their own warnings had said so, and the comparison nothing.
#[test]
fn compare_names_the_runs_an_earlier_runs_cache_warmed() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _, _server) = serve(&["--host", "127.0.0.1", "--speed", "10"]);
    let bench = |name: &str, args: &[&str]| {
        let out = dir.path().join(name);
        goodput()
            .args(["bench", "-q", "--url", &url, "--metrics-interval", "200ms", "-n", "8", "-c", "2"])
            .args(["--input-tokens", "400", "--output-tokens", "8"])
            .args(args)
            .arg("-o")
            .arg(&out)
            .timeout(Duration::from_secs(120))
            .assert()
            .success();
        out
    };
    let compared = |a: &std::path::Path, b: &std::path::Path| {
        let (json, md) = (dir.path().join("c.json"), dir.path().join("c.md"));
        let o =
            goodput().arg("compare").arg(a).arg(b).arg("-o").arg(&json).arg("--markdown").arg(&md).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        (text, read_json(&json)["note"].as_str().unwrap_or_default().to_string(), std::fs::read_to_string(&md).unwrap())
    };
    let same = bench("same.json", &["--seed", "77", "--runs", "2", "--same-seed"]);
    let fresh = bench("fresh.json", &["--seed", "500", "--runs", "2"]);
    let said = |p: &std::path::Path| read_json(p)["warnings"].to_string();
    assert!(said(&same).contains("of --runs found the server's prefix cache"), "{}", said(&same));
    let (text, note, md) = compared(&fresh, &same);
    // Markdown escapes the parentheses.
    let md = md.replace("\\(", "(").replace("\\)", ")");
    for shown in [&text, &note, &md] {
        assert!(shown.contains("when same.json (run 2 of its --runs) ran"), "{shown}");
        assert!(shown.contains("latency gains may be the cache's"), "{shown}");
        assert!(!shown.contains("fresh.json (run"), "{shown}");
    }
    // One run, then its seed again: the second found its prompts cached.
    let (cold, again) = (bench("cold.json", &["--seed", "900"]), bench("again.json", &["--seed", "900"]));
    assert!(said(&again).contains("held them before the run"), "{}", said(&again));
    let (text, note, md) = compared(&cold, &again);
    for shown in [&text, &note, &md] {
        assert!(shown.contains("when again.json ran"), "{shown}");
    }
    let (_, note, _) = compared(&cold, &fresh);
    assert!(!note.contains("prefix cache"), "{note}");
}

/// Saved runs whose SLOs are one in meaning but not in text: a document
/// written before limits printed from whole nanoseconds holds
/// `ttft<=150.10000000000002ms` where this version writes `ttft<=150.1ms`.
/// Compared, goodput is compared and gated, where it had been left
/// unjudged as "other SLO" (a failing gate); a limit truly other still is.
#[test]
fn compare_reads_one_slo_in_other_units_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, slo: &str| {
        let p = dir.path().join(name);
        goodput()
            .args(["estimate", "-q", "-n", "100", "-c", "8", "--seed", "3", "--slo", slo, "-o"])
            .arg(&p)
            .assert()
            .success();
        p
    };
    let a = run("a.json", "ttft<=150.1ms,tpot:p99<=1s");
    assert_eq!(read_json(&a)["slo"]["spec"], "ttft<=150.1ms,tpot:p99<=1s");
    let mut old = read_json(&a);
    old["slo"]["spec"] = "tpot:p99<=1000ms,ttft<=150.10000000000002ms".into();
    let b = dir.path().join("old.json");
    std::fs::write(&b, serde_json::to_string(&old).unwrap()).unwrap();
    goodput().arg("compare").arg(&a).arg(&b).args(["--fail-if", "goodput<-5%"]).assert().success();
    let c = run("c.json", "ttft<=150.2ms,tpot:p99<=1s");
    let o = goodput().arg("compare").arg(&a).arg(&c).args(["--fail-if", "goodput<-5%"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("judged by different SLOs"), "{text}");
}
