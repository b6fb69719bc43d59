//! `bench --until` and `--stop-on-slo` through the binary against the
//! fixed-timing server (and, for the order of two answers, in virtual time:
//! a quiet engine's is known sooner than a noisy one's), the SLO's verdict ends a run, the
//! result and the terminal say why the run stopped, and bad options are
//! refused with their fix.

use crate::cmd;

use cmd::{fixed_server, goodput, read_json, records, GoodputCommand};
use goodput_core::RequestMetrics;
use goodput_sim::fixed::FixedProfile;
use std::time::Duration;

/// TTFT 50 ms, plus a uniform share of `jitter` drawn per request.
fn server(jitter: Duration) -> (tokio::runtime::Runtime, String) {
    fixed_server(FixedProfile {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(1),
        tokens_per_chunk: 1,
        ttft_jitter: jitter,
        jitter_seed: 7,
        ..Default::default()
    })
}

/// Runs `--until ttft:p50±5%` capped at 5,000 requests; the result and the
/// records.
fn until_run(url: &str, extra: &[&str]) -> (serde_json::Value, Vec<goodput_core::RequestRecord>, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let o = goodput()
        .args(["bench", "--url", url, "-n", "5000", "-c", "64", "--output-tokens", "2", "--input-tokens", "8"])
        .args(["--progress", "none"])
        .args(extra)
        .writing(&out, &rec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    (read_json(&out), records(&rec), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn until_stops_a_quiet_and_a_noisy_server_s_runs_at_their_answers() {
    let (_q, quiet_url) = server(Duration::ZERO);
    let (_n, noisy_url) = server(Duration::from_millis(200));
    let (quiet, quiet_recs, text) = until_run(&quiet_url, &["--until", "ttft:p50±5%"]);
    let (noisy, noisy_recs, _) = until_run(&noisy_url, &["--until", "ttft:p50+-5%"]);
    for v in [&quiet, &noisy] {
        assert_eq!(v["stop"]["reason"], "until_met", "{}", v["stop"]);
        assert_eq!(v["interrupted"], false, "a rule's stop is the run's own end");
        assert_eq!(v["config"]["stopping"]["until"], "ttft:p50±5%", "{}", v["config"]);
    }
    let at = |v: &serde_json::Value| v["stop"]["at_requests"].as_u64().unwrap();
    // A p50 ±5% of a TTFT spread uniformly over 200 ms needs its interval
    // within ±7.5 ms: about 680 requests (196 ms / √n), far more than 300.
    assert!(at(&noisy) >= 300, "{}", noisy["stop"]);
    // Which of the two answers first is not asserted here: on a busy
    // machine its own waits spread and bunch the quiet server's TTFTs
    // (seen with both cores busy: its median answered at 743 requests, the
    // noisy one's at 594, though the noisy TTFTs spread 5.5 times wider
    // against their median), and the rule rightly widens its interval for
    // requests that depend on their neighbours. The order is the rule's,
    // checked in virtual time below, where nothing but the server's own
    // noise spreads the TTFTs.
    assert!(noisy_recs.len() < 5000);
    // The jitter is really there: the noisy TTFTs spread over most of 200 ms.
    let ttfts: Vec<f64> = noisy_recs.iter().filter_map(|r| r.ttft()).map(|d| d.as_secs_f64() * 1e3).collect();
    let (lo, hi) = ttfts.iter().fold((f64::MAX, 0.0f64), |(l, h), &t| (l.min(t), h.max(t)));
    assert!(lo >= 50.0 && hi - lo > 150.0, "{lo} {hi}");
    // Sending stopped at the decision: what came after was in flight then,
    // or sent into a slot that freed in the same burst of completions
    // before the sender saw the stop (a closed loop of 64).
    assert!(quiet_recs.len() as u64 <= at(&quiet) + 2 * 64, "{} records", quiet_recs.len());
    assert!(text.contains("stopped: until_met after"), "{text}");
    assert!(text.contains("ttft:p50±5%:"), "{text}");
}

/// The rule's order, in virtual time: the simulated engine's TTFTs spread
/// only by its own front end's jitter (50 ms a request, seeded), so a
/// quiet engine's p50 ±5% is known at fewer requests than a noisy one's,
/// whatever the machine is doing.
#[test]
fn a_quiet_engine_s_answer_is_known_sooner_than_a_noisy_one_s_in_virtual_time() {
    let dir = tempfile::tempdir().unwrap();
    let noisy = dir.path().join("noisy.json");
    std::fs::write(&noisy, r#"{"frontend_jitter_ms": 50}"#).unwrap();
    let run = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        goodput()
            .args(["estimate", "-c", "64", "-n", "5000", "--output-tokens", "2", "--input-tokens", "8", "--seed", "1"])
            .args(["--until", "ttft:p50±5%"])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)["stop"].clone()
    };
    let quiet = run("quiet.json", &[]);
    let noisy = run("noisy-run.json", &["--calibration", noisy.to_str().unwrap()]);
    for v in [&quiet, &noisy] {
        assert_eq!(v["reason"], "until_met", "{v}");
    }
    let at = |v: &serde_json::Value| v["at_requests"].as_u64().unwrap();
    assert!(at(&quiet) < at(&noisy), "quiet {quiet}, noisy {noisy}");
}

#[test]
fn the_slo_s_verdict_ends_a_run_on_whichever_side_it_falls() {
    // Each request's TTFT draws its own share of 40 ms: the p95 (about
    // 88 ms) is set by independent draws. Without them the 64 users move
    // in lockstep against this fixed-timing server, or, started apart, in
    // whatever bursts the machine's scheduler makes; the p95's few waves
    // beyond it are then a few draws, and its widened interval rightly has
    // no upper bound by the 5,000th request (seen on a busy 2-core CI
    // machine with the users started 60 ms apart: p95 [52.5, none]).
    //
    // Where the machine itself bunches the sends (seen with a build running
    // beside the tests: the p95's interval [87.4, none] at the 5,000th
    // request), the requests are worth fewer independent draws and the
    // verdict is rightly left undecided to the cap: then the run says so,
    // and its SLO still passes.
    let (_rt, url) = server(Duration::from_millis(40));
    let (met, recs, _) = until_run(&url, &["--slo", "ttft:p95<=200ms", "--stop-on-slo"]);
    let detail = met["stop"]["detail"].as_str().unwrap();
    match met["stop"]["reason"].as_str() {
        Some("slo_decided") => {
            assert!(detail.starts_with("the SLO is met"), "{}", met["stop"]);
            assert!(recs.len() < 5000);
        }
        Some("cap") => {
            assert!(detail.contains("the SLO undecided"), "{}", met["stop"]);
            eprintln!("the machine bunched the sends: the verdict was left to the cap ({detail})");
        }
        _ => panic!("{}", met["stop"]),
    }
    assert_eq!(met["slo"]["pass"], true);
    assert_eq!(met["config"]["stopping"]["stop_on_slo"], true, "{}", met["config"]);
    let (missed, _, _) = until_run(&url, &["--slo", "ttft:p95<=20ms", "--stop-on-slo"]);
    assert!(missed["stop"]["detail"].as_str().unwrap().starts_with("the SLO is missed"), "{}", missed["stop"]);
    assert_eq!(missed["slo"]["pass"], false);
}

#[test]
fn a_run_without_rules_says_its_count_ended_it_and_one_whose_rule_never_held_says_cap() {
    let (_rt, url) = server(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let base = ["bench", "-q", "--url", &url, "-n", "60", "-c", "8", "--output-tokens", "2", "--input-tokens", "8"];
    goodput().args(base).writing(&out, &rec).assert().success();
    assert_eq!(read_json(&out)["stop"]["reason"], "requests");
    let md = dir.path().join("run.md");
    goodput()
        .args(base)
        .args(["--until", "ttft:p99±0.001ms", "--markdown"])
        .arg(&md)
        .writing(&out, &rec)
        .assert()
        .success();
    let v = read_json(&out);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("- **Stopped** cap after 60 requests "), "{md}");
    let page = dir.path().join("run.html");
    goodput().args(["report", "-q"]).arg(&out).arg("--html").arg(&page).assert().success();
    let page = std::fs::read_to_string(&page).unwrap();
    assert!(page.contains("stopped: cap after 60 requests (1 look): the run&#39;s 60 requests came first"), "{page}");
    assert_eq!(v["stop"]["reason"], "cap", "{}", v["stop"]);
    assert!(v["stop"]["detail"].as_str().unwrap().starts_with("the run's 60 requests came first"), "{}", v["stop"]);
    assert_eq!(records(&rec).len(), 60);
    // Judged again, the run still says why it stopped.
    let again = dir.path().join("again.json");
    goodput().args(["report", "-q"]).arg(&out).arg("--records").arg(&rec).arg("-o").arg(&again).assert().success();
    assert_eq!(read_json(&again)["stop"], v["stop"]);
}

#[test]
fn bad_stopping_options_are_refused_with_their_fix() {
    let run =
        |extra: &[&str]| goodput().args(["bench", "--url", "http://127.0.0.1:9", "-n", "5"]).args(extra).refusal();
    let e = run(&["--until", "ttft±5%"]);
    assert!(e.contains("'ttft' needs a percentile: write e.g. ttft:p99±5%"), "{e}");
    let e = run(&["--until", "ttft:p99"]);
    assert!(e.contains("has no half-width"), "{e}");
    let e = run(&["--stop-on-slo"]);
    assert!(e.contains("--stop-on-slo needs a latency SLO"), "{e}");
    let e = run(&["--until", "ttft:p99±5%", "--shard", "0/2", "--seed", "1", "-o", "x.json", "--include-requests"]);
    assert!(e.contains("drop them, or --shard"), "{e}");
}

/// A sweep's points end by the same rule: each stops once its figure is
/// known, far short of its count, live and in virtual time.
#[test]
fn a_sweep_s_points_end_when_their_answer_is_known() {
    let (_rt, url) = server(Duration::ZERO);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    goodput()
        .args(["sweep", "-q", "--url", &url, "--concurrency", "4,16", "-n", "3000"])
        .args(["--output-tokens", "2", "--input-tokens", "8", "--until", "ttft:p50±5%", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v = read_json(&out);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for p in points {
        let r = &p["result"];
        assert_eq!(r["stop"]["reason"], "until_met", "{}", r["stop"]);
        assert!(r["summary"]["requests"]["sent"].as_u64().unwrap() < 3000, "{}", r["summary"]["requests"]);
    }
    // In virtual time too; and --stages, one run, refuses the rule.
    goodput()
        .args(["sweep", "-q", "--estimate", "--concurrency", "4,16", "-n", "3000", "--input-tokens", "64"])
        .args(["--output-tokens", "8", "--until", "ttft:p50±5%", "-o"])
        .arg(&out)
        .assert()
        .success();
    for p in read_json(&out)["points"].as_array().unwrap() {
        let r = &p["result"];
        assert_eq!(r["stop"]["reason"], "until_met", "{}", r["stop"]);
        assert!(r["summary"]["requests"]["sent"].as_u64().unwrap() < 3000, "{}", r["summary"]["requests"]);
    }
    let e = goodput().args(["sweep", "--estimate", "--stages", "1/1s", "--until", "ttft:p50±5%"]).refusal();
    assert!(e.contains("--stages is one run of changing load, not points: drop them, or --stages"), "{e}");
}

/// In virtual time the same rule ends `estimate`: the simulated engine with
/// no front-end jitter is decided at the first look its start's wave allows, with 200 ms of it
/// thousands of requests later, short of the cap; and sending stops there
/// (what follows was in flight: 16 users).
#[test]
fn estimate_stops_in_virtual_time_sooner_on_a_quiet_engine() {
    let dir = tempfile::tempdir().unwrap();
    let run = |jitter_ms: u32| {
        let cal = dir.path().join(format!("cal{jitter_ms}.json"));
        std::fs::write(&cal, format!("{{\"frontend_jitter_ms\": {jitter_ms}}}")).unwrap();
        let out = dir.path().join(format!("est{jitter_ms}.json"));
        goodput()
            .args(["estimate", "-q", "-c", "16", "-n", "5000", "--input-tokens", "256", "--output-tokens", "32"])
            .args(["--until", "ttft:p50±5%", "--calibration"])
            .arg(&cal)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let (quiet, noisy) = (run(0), run(200));
    for v in [&quiet, &noisy] {
        assert_eq!(v["stop"]["reason"], "until_met", "{}", v["stop"]);
        let sent = v["summary"]["requests"]["sent"].as_u64().unwrap();
        assert!(sent <= v["stop"]["at_requests"].as_u64().unwrap() + 16, "{sent} {}", v["stop"]);
    }
    let at = |v: &serde_json::Value| v["stop"]["at_requests"].as_u64().unwrap();
    // The first look once the start's 16 users, sent together, can no
    // longer decide a p50 alone (2 × 16 / 0.5 = 64): 50, 63, then 79.
    assert_eq!(at(&quiet), 79, "{}", quiet["stop"]);
    assert!(at(&noisy) > 1000 && at(&noisy) < 5000, "{}", noisy["stop"]);
}

/// `--stop-on-slo` judges the SLO's quality terms as the verdict does:
/// answers scored as each request completes, one in five wrong, fail
/// `exact>=0.95`, and the run stops as missed (the rule had left the term
/// out and stopped it as met on its TTFT alone). A corpus score has no
/// interval before the run's end: the run says so at its start and at its
/// cap, and an SLO of corpus scores alone is refused. The TTFT term is a
/// median: a p95's upper bound, widened for neighbours that depend on each
/// other, had no order statistic left when a busy machine bunched the
/// TTFTs (`ttft:p95<=10s: [31.563, none]`, undecided to the 10,000 cap).
#[test]
fn stop_on_slo_judges_quality_terms_as_the_verdict_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("qa.jsonl");
    let lines: Vec<String> = (0..100)
        .map(|i| format!("{{\"prompt\": \"What is item {i}?\", \"reference\": \"It is the answer numbered {i}\"}}"))
        .collect();
    std::fs::write(&data, lines.join("\n")).unwrap();
    let data = data.to_str().unwrap();
    let (url, _, _server) = cmd::serve(&["--answers", data, "--fault-wrong-rate", "0.2", "--fault-seed", "4"]);
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let bench = |slo: &str| {
        let o = goodput()
            .args(["bench", "-q", "--url", &url, "--dataset", data, "-c", "8", "--output-tokens", "64"])
            .args(["--slo", slo, "--stop-on-slo"])
            .writing(&out, &rec)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "{err}");
        (read_json(&out), err)
    };
    let (v, _) = bench("ttft:p50<=10s,exact>=0.95");
    let detail = v["stop"]["detail"].as_str().unwrap();
    assert_eq!(v["stop"]["reason"], "slo_decided", "{}", v["stop"]);
    assert!(detail.starts_with("the SLO is missed") && detail.contains("exact>=0.95: 0."), "{detail}");
    assert_eq!(v["slo"]["pass"], false);
    assert!(v["summary"]["requests"]["sent"].as_u64().unwrap() < 10_000, "{}", v["summary"]["requests"]);
    // Every answer right but one in five: `exact>=0.5` is met.
    let (v, _) = bench("ttft:p50<=10s,exact>=0.5");
    assert!(v["stop"]["detail"].as_str().unwrap().starts_with("the SLO is met"), "{}", v["stop"]);
    assert_eq!(v["slo"]["pass"], true);
    // A corpus score: told at the start, never decided met, and said so at the cap.
    let o = goodput()
        .args(["bench", "-q", "--url", &url, "--dataset", data, "-c", "8", "-n", "120", "--output-tokens", "64"])
        .args(["--slo", "ttft:p50<=10s,bleu>=20", "--stop-on-slo"])
        .writing(&out, &rec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{err}");
    assert!(err.contains("note: --stop-on-slo: bleu>=20 is a corpus score of the whole run"), "{err}");
    let v = read_json(&out);
    assert_eq!(v["stop"]["reason"], "cap", "{}", v["stop"]);
    let detail = v["stop"]["detail"].as_str().unwrap();
    assert!(detail.contains("bleu>=20: a corpus score of the whole run, not judged before its end"), "{detail}");
    let e = goodput()
        .args(["bench", "--url", "http://127.0.0.1:9", "-n", "5", "--dataset", data])
        .args(["--slo", "bleu>=20", "--stop-on-slo"])
        .refusal();
    assert!(e.contains("--stop-on-slo cannot decide --slo bleu>=20 before the run's end"), "{e}");
}
