//! What `report` and `compare` read back: a run's own account of its client
//! kept when its records are analysed again, the files an import reads
//! beside the one named kept safe from outputs, and records that no run can
//! hold (a file cut at a line's end, a request twice, times out of order)
//! refused with the record and the field named.

#[allow(dead_code)]
use crate::cmd;

use cmd::{goodput, read_json, GoodputCommand};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A short bench on the embedded fixed-timing server, its records held in
/// the result and written beside it.
fn run(dir: &Path, n: u32) -> (PathBuf, PathBuf) {
    let (out, rec) = (dir.join("run.json"), dir.join("run.jsonl"));
    goodput()
        .args(["bench", "-q", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "1ms"])
        .args(["--output-tokens", "4", "--input-tokens", "8", "--include-requests", "-n"])
        .arg(n.to_string())
        .arg("-o")
        .arg(&out)
        .arg("--records")
        .arg(&rec)
        .assert()
        .success();
    (out, rec)
}

fn write_json(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

/// The exit status of `goodput report FILE ARGS`.
fn report_code(file: &Path, args: &[&str]) -> Option<i32> {
    goodput().arg("report").arg(file).args(args).output().unwrap().status.code()
}

/// A run whose client stalled while a request was in flight fails
/// `--fail-on-unsteady` however it is read back: its records analysed again
/// (held in the result, or from `--records`) had dropped `client_stalls` and
/// `client`, and exited 0.
#[test]
fn a_client_stall_is_kept_when_the_records_are_analysed_again() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out, rec) = run(dir.path(), 2);
    let mut v = read_json(&out);
    let stalled = v["requests"][0]["id"].as_u64().unwrap();
    v["requests"][0]["client_stalled"] = true.into();
    v["client_stalls"] = json!({
        "threshold_ms": 50.0, "count": 1, "total_ms": 120.0, "longest_ms": 120.0, "requests": 1,
        "stalls": [{"start_ns": 0, "end_ns": 120_000_000}]
    });
    assert!(v["client"].is_object(), "a bench measures its own cost: {}", v["client"]);
    write_json(&p("stall_inc.json"), &v);
    v.as_object_mut().unwrap().remove("requests");
    write_json(&p("stall.json"), &v);
    let lines: Vec<String> = std::fs::read_to_string(&rec)
        .unwrap()
        .lines()
        .map(|l| {
            let mut r: Value = serde_json::from_str(l).unwrap();
            if r["id"].as_u64() == Some(stalled) {
                r["client_stalled"] = true.into();
            }
            r.to_string()
        })
        .collect();
    std::fs::write(p("stall.jsonl"), lines.join("\n") + "\n").unwrap();

    let stall_jsonl = p("stall.jsonl");
    let records = ["--records", stall_jsonl.to_str().unwrap()];
    assert_eq!(report_code(&p("stall.json"), &["-q", "--fail-on-unsteady"]), Some(4), "as saved");
    assert_eq!(report_code(&p("stall.json"), &[&records[..], &["-q", "--fail-on-unsteady"]].concat()), Some(4));
    assert_eq!(report_code(&p("stall_inc.json"), &["-q", "--fail-on-unsteady"]), Some(4));
    // The written result carries both blocks.
    goodput().arg("report").arg(p("stall_inc.json")).arg("-q").arg("-o").arg(p("again.json")).assert().success();
    let again = read_json(&p("again.json"));
    // The flagged records, counted again: the one flagged here, and any the
    // run's own client flagged (a busy machine's: seen in a clean clone's CI).
    let flagged = flagged_records(&p("stall_inc.json"));
    assert!(flagged >= 1);
    assert_eq!(again["client_stalls"]["requests"], flagged, "{}", again["client_stalls"]);
    assert_eq!(again["client_stalls"]["count"], 1);
    assert_eq!(again["client"], v["client"]);
}

/// The records of a saved result that are flagged `client_stalled`.
fn flagged_records(path: &Path) -> u64 {
    let v = read_json(path);
    v["requests"].as_array().unwrap().iter().filter(|r| r["client_stalled"] == true).count() as u64
}

/// AIPerf's records and its summary are each read with the other: no output
/// may write over the one not named (`report profile_export_aiperf.json -o
/// profile_export.jsonl` had replaced AIPerf's records with goodput's result).
#[test]
fn no_output_writes_over_the_file_an_import_reads_beside_the_one_named() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../goodput-report/tests/fixtures/peers/aiperf");
    for f in ["profile_export.jsonl", "profile_export_aiperf.json"] {
        std::fs::copy(fixtures.join(f), p(f)).unwrap();
    }
    let before =
        (std::fs::read(p("profile_export.jsonl")).unwrap(), std::fs::read(p("profile_export_aiperf.json")).unwrap());
    let err =
        goodput().arg("report").arg(p("profile_export_aiperf.json")).arg("-o").arg(p("profile_export.jsonl")).refusal();
    assert!(err.contains("would write over") && err.contains("profile_export.jsonl"), "{err}");
    let err =
        goodput().arg("report").arg(p("profile_export.jsonl")).arg("-o").arg(p("profile_export_aiperf.json")).refusal();
    assert!(err.contains("would write over") && err.contains("profile_export_aiperf.json"), "{err}");
    let (out, _) = run(dir.path(), 2);
    let err = goodput()
        .arg("compare")
        .arg(&out)
        .arg(p("profile_export_aiperf.json"))
        .arg("--html")
        .arg(p("profile_export.jsonl"))
        .refusal();
    assert!(err.contains("would write over"), "{err}");
    let after =
        (std::fs::read(p("profile_export.jsonl")).unwrap(), std::fs::read(p("profile_export_aiperf.json")).unwrap());
    assert!(before == after, "AIPerf's files are as they were");
    // Any other output is written.
    goodput().arg("report").arg(p("profile_export.jsonl")).arg("-q").arg("-o").arg(p("ai.json")).assert().success();
}

/// A records file holding fewer records than its result says were sent is
/// refused (half a file had been analysed as a run of half the requests);
/// one whose last line was cut short is read up to it, and the written
/// result says so.
#[test]
fn a_records_file_must_hold_every_request_its_run_sent() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out, rec) = run(dir.path(), 4);
    let text = std::fs::read_to_string(&rec).unwrap();
    let half: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(p("half.jsonl"), &half).unwrap();
    let err = goodput().arg("report").arg(&out).arg("--records").arg(p("half.jsonl")).refusal();
    assert!(err.contains("holds 2 records, where") && err.contains("says 4 requests were sent"), "{err}");
    let err = goodput()
        .arg("compare")
        .arg(&out)
        .arg(&out)
        .args(["--records"])
        .arg(&rec)
        .arg("--records")
        .arg(p("half.jsonl"))
        .refusal();
    assert!(err.contains("holds 2 records"), "{err}");
    // A result that claims a quadrillion requests: refused by count, having
    // reserved no more room than the file's bytes could fill.
    let mut huge = read_json(&out);
    huge["summary"]["requests"]["sent"] = serde_json::json!(1_000_000_000_000_000u64);
    std::fs::write(p("huge.json"), huge.to_string()).unwrap();
    let err = goodput().arg("report").arg(p("huge.json")).arg("--records").arg(&rec).refusal();
    assert!(err.contains("holds 4 records, where") && err.contains("says 1000000000000000 requests"), "{err}");
    // Cut mid-line: read up to the cut, and said in the document.
    std::fs::write(p("cut.jsonl"), &text[..text.len() - 40]).unwrap();
    goodput()
        .arg("report")
        .arg(&out)
        .arg("--records")
        .arg(p("cut.jsonl"))
        .arg("-q")
        .arg("-o")
        .arg(p("cut.json"))
        .assert()
        .success();
    let cut = read_json(&p("cut.json"));
    assert_eq!(cut["summary"]["requests"]["sent"], 3);
    assert!(cut["warnings"].to_string().contains("line 4 was cut short"), "{}", cut["warnings"]);
    // A byte-order mark before the first line is skipped.
    std::fs::write(p("bom.jsonl"), format!("\u{feff}{text}")).unwrap();
    goodput().arg("report").arg(&out).arg("--records").arg(p("bom.jsonl")).arg("-q").assert().success();
}

/// A document whose own `requests` hold fewer records than its summary says
/// were sent (edited, or cut by a tool) is shown as saved, with a warning,
/// and `compare` reads the same summary; judging it again needs its records.
/// `requests: []` had been recomputed as a run of no requests.
#[test]
fn a_document_s_own_records_must_hold_every_request_its_summary_counts() {
    let dir = tempfile::tempdir().unwrap();
    let (out, _) = run(dir.path(), 4);
    let mut v = read_json(&out);
    let p50 = v["summary"]["ttft_ms"]["percentiles"].clone();
    v["requests"] = json!([]);
    let edited = dir.path().join("edited.json");
    write_json(&edited, &v);
    let o =
        goodput().arg("report").arg(&edited).arg("-q").arg("-o").arg(dir.path().join("again.json")).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds 0 per-request records where its summary says 4 requests were sent"), "{err}");
    let again = read_json(&dir.path().join("again.json"));
    assert_eq!(again["summary"]["requests"]["sent"], 4);
    assert_eq!(again["summary"]["ttft_ms"]["percentiles"], p50);
    let err = goodput().arg("report").arg(&edited).args(["--slo", "ttft:p50<=1s"]).refusal();
    assert!(err.contains("holds 0 per-request records") && err.contains("--records"), "{err}");
}

/// Records no run holds are refused where they are read, with the request's
/// id and the field: a request twice, a chunk before its send or after its
/// end, a send before its schedule, an end past the clock's horizon, a
/// count of tokens past any request's.
#[test]
fn records_no_run_holds_are_refused_with_the_request_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out, rec) = run(dir.path(), 2);
    let v = read_json(&out);
    let edited = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut e = v.clone();
        edit(&mut e);
        write_json(&p(name), &e);
        goodput().arg("report").arg(p(name)).refusal()
    };
    let err = edited("dup.json", &|e| {
        let first = e["requests"][0].clone();
        e["requests"].as_array_mut().unwrap().push(first);
    });
    assert!(err.contains("twice, at requests[0] and requests[2]"), "{err}");
    let id = v["requests"][0]["id"].as_u64().unwrap();
    let end = v["requests"][0]["end_ns"].as_u64().unwrap();
    let last = v["requests"][0]["chunks"].as_array().unwrap().len() - 1;
    let err = edited("chunk.json", &|e| e["requests"][0]["chunks"][last]["t_ns"] = (end + 1).into());
    let said = format!("chunks[{last}].t_ns {} came after its end_ns {end}", end + 1);
    assert!(err.contains(&format!("request {id}")) && err.contains(&said), "{err}");
    let err = edited("late.json", &|e| e["requests"][0]["scheduled_ns"] = u64::MAX.into());
    assert!(err.contains("came before its scheduled_ns"), "{err}");
    let err = edited("tokens.json", &|e| e["requests"][0]["output_tokens"] = u64::MAX.into());
    assert!(err.contains("output_tokens 18446744073709551615 is past"), "{err}");
    // The same in a records file: with its line, its request and the field.
    let mut lines: Vec<Value> =
        std::fs::read_to_string(&rec).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    lines[1]["end_ns"] = u64::MAX.into();
    let id = lines[1]["id"].as_u64().unwrap();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(p("end.jsonl"), text).unwrap();
    let err = goodput().arg("report").arg(&out).arg("--records").arg(p("end.jsonl")).refusal();
    assert!(
        err.contains(&format!("line 2 holds request {id}")) && err.contains("end_ns 18446744073709551615"),
        "{err}"
    );
}

/// `--percentiles` takes what a saved result is read back with: 0 had been
/// written, and the document then refused by `report` and `compare`.
#[test]
fn a_percentile_of_zero_is_refused_at_the_flag() {
    let err = goodput().args(["estimate", "-n", "2", "--percentiles", "0,50"]).refusal();
    assert!(err.contains("outside (0, 100]"), "{err}");
}

/// The terminal's intervals table keeps two spaces between columns however
/// wide an interval is: five-digit bounds had run together
/// ("[36212, 36212] [36212, 36702]").
#[test]
fn wide_intervals_keep_their_columns_apart() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("long.json");
    goodput()
        .args(["estimate", "-q", "-n", "60", "-c", "16", "--input-tokens", "8000", "--output-tokens", "2000"])
        // Users started apart: sent together, their waves leave every tail's
        // interval unbounded above, and no column holds two wide bounds.
        .args(["--ramp-up", "20s"])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let o = goodput().arg("report").arg(&out).env("COLUMNS", "100").output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    let table: Vec<&str> = text.lines().skip_while(|l| !l.contains("intervals (ms)")).take(5).collect();
    assert!(table.iter().any(|l| l.contains("E2E") && l.contains("]  [")), "no wide row: {table:#?}");
    for line in &table[1..] {
        assert!(!line.contains("] ["), "{line}");
    }
}

/// `report` of a saved estimate on four GPUs (TP 2 × DP 2): a price given
/// anew is for those four GPUs (it had been priced as one, at a quarter of
/// the cost), and the simulated engine's energy
/// is kept (it had been dropped: no energy line, `null` written).
#[test]
fn report_prices_and_keeps_the_energy_of_a_saved_estimate_s_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("e.json");
    goodput()
        .args(["estimate", "-q", "--tp", "2", "--dp", "2", "--input-tokens", "64", "--output-tokens", "16"])
        .args(["-n", "16", "-c", "4", "--gpu-hour-usd", "2.5", "--include-requests", "-o"])
        .arg(&saved)
        .assert()
        .success();
    let e = read_json(&saved);
    assert_eq!(e["cost"]["gpus"], 4, "{}", e["cost"]);
    let again = dir.path().join("r.json");
    let o = goodput().arg("report").arg(&saved).args(["--gpu-hour-usd", "5", "-o"]).arg(&again).output().unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let r = read_json(&again);
    assert_eq!(
        (r["cost"]["gpus"].as_u64(), r["cost"]["usd_per_hour"].as_f64()),
        (Some(4), Some(20.0)),
        "{}",
        r["cost"]
    );
    let per_m = |d: &Value| d["cost"]["usd_per_million_output_tokens"].as_f64().unwrap();
    assert!((per_m(&r) / per_m(&e) - 2.0).abs() < 1e-9, "{} vs {}", r["cost"], e["cost"]);
    assert!(said.contains("energy: ") && said.contains("on 4 GPU(s) (the simulated engine's power model)"), "{said}");
    assert_eq!(r["energy"], e["energy"], "the same run, the same energy");

    // No flag: the saved price, on the same four GPUs.
    let plain = dir.path().join("plain.json");
    goodput().arg("report").arg(&saved).args(["-q", "-o"]).arg(&plain).assert().success();
    let p = read_json(&plain);
    assert_eq!((p["cost"]["gpus"].as_u64(), p["cost"]["usd_per_hour"].as_f64()), (Some(4), Some(10.0)));
    assert_eq!(p["energy"], e["energy"]);

    // Another GPU count than the engine ran on: refused, as estimate
    // refuses it (it had been priced as another deployment).
    let err = goodput().arg("report").arg(&saved).args(["--gpu-hour-usd", "5", "--gpus", "8"]).refusal();
    assert!(err.contains("--gpus 8") && err.contains("ran on 4 GPU(s)"), "{err}");
    goodput().arg("report").arg(&saved).args(["-q", "--gpus", "4"]).assert().success();

    // A window of it: the engine's energy is the whole run's, so none (the
    // whole run's J/token beside the window's tokens/s per MW had mixed
    // two spans).
    let windowed = dir.path().join("w.json");
    let o = goodput().arg("report").arg(&saved).args(["--window", "0s..1h", "-o"]).arg(&windowed).output().unwrap();
    assert!(o.status.success());
    let w = read_json(&windowed);
    assert!(w["energy"].is_null(), "{}", w["energy"]);
    assert!(w["warnings"].to_string().contains("energy is for the whole run"), "{}", w["warnings"]);
}

/// A short bench on the embedded fixed-timing server, saved without its
/// records (they are written beside it).
fn run_without_records(dir: &Path) -> (PathBuf, PathBuf) {
    let (out, rec) = (dir.join("bare.json"), dir.join("bare.jsonl"));
    goodput()
        .args(["bench", "-q", "--sim-profile", "fixed", "--sim-ttft", "5ms", "--sim-itl", "1ms"])
        .args(["--output-tokens", "4", "--input-tokens", "8", "-n", "12", "-c", "2"])
        .writing(&out, &rec)
        .assert()
        .success();
    (out, rec)
}

/// A saved run priced anew (`--gpu-hour-usd`, `--gpus`) needs only its
/// saved throughputs: priced without its records, it gets the cost its
/// records re-analysed give. It had been refused ("holds no per-request
/// records"). What the records are needed for is still refused, and says so.
#[test]
fn a_saved_run_is_priced_anew_without_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (out, rec) = run_without_records(dir.path());
    assert!(read_json(&out)["requests"].is_null(), "saved without its records");
    let price = ["-q", "--gpu-hour-usd", "2", "--gpus", "2", "-o"];
    goodput().arg("report").arg(&out).args(price).arg(p("priced.json")).assert().success();
    goodput().arg("report").arg(&out).arg("--records").arg(&rec).args(price).arg(p("again.json")).assert().success();
    let (priced, again) = (read_json(&p("priced.json")), read_json(&p("again.json")));
    assert_eq!(priced["cost"]["gpus"], 2, "{}", priced["cost"]);
    assert_eq!(priced["cost"]["usd_per_hour"], 4.0, "{}", priced["cost"]);
    assert!(priced["cost"]["usd_per_million_output_tokens"].as_f64().is_some_and(|c| c > 0.0), "{}", priced["cost"]);
    assert_eq!(priced["cost"], again["cost"], "the cost the records re-analysed give");
    assert_eq!(priced["config"]["judge"]["cost"], json!({"gpu_hour_usd": 2.0, "gpus": 2}));
    assert_eq!(priced["summary"], read_json(&out)["summary"], "nothing else is recomputed");
    // Priced for one GPU: the count a price alone gives a measured run.
    goodput().arg("report").arg(&out).args(["-q", "--gpu-hour-usd", "3", "-o"]).arg(p("one.json")).assert().success();
    assert_eq!(read_json(&p("one.json"))["cost"]["usd_per_hour"], 3.0);
    let err = goodput().arg("report").arg(&out).args(["--gpus", "2"]).refusal();
    assert!(err.contains("--gpus 2 counts the GPUs a price is paid for") && err.contains("has no price"), "{err}");
    // An SLO needs the records: read from beside the run, where they are
    // (RUN.jsonl), and refused where they are not.
    let judged = ["--gpu-hour-usd", "2", "--slo", "ttft<=1s", "-q", "-o"];
    goodput().arg("report").arg(&out).args(judged).arg(p("judged.json")).assert().success();
    std::fs::rename(&rec, p("elsewhere.jsonl")).unwrap();
    let err = goodput().arg("report").arg(&out).args(["--gpu-hour-usd", "2", "--slo", "ttft<=1s"]).refusal();
    assert!(err.contains("pass --records FILE") && err.contains("a price or a GPU count alone needs none"), "{err}");
}

/// A quality term on a run without references is refused by `report` as
/// `bench` refuses it (exit 2, the same words), where it had judged the
/// term `measured - FAIL` and exited 3 under --fail-on-slo.
#[test]
fn a_quality_slo_on_a_run_without_references_is_refused_by_report_as_by_bench() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = run_without_records(dir.path());
    let said = "--slo exact>=0.8 judges answers against their references, and this run has none";
    let o = goodput()
        .arg("report")
        .arg(&out)
        .arg("--records")
        .arg(&rec)
        .args(["--slo", "exact>=0.8", "--fail-on-slo"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}{}", String::from_utf8_lossy(&o.stdout));
    assert!(err.contains(said) && err.contains("--dataset"), "{err}");
    let bench =
        goodput().args(["bench", "-q", "--sim-profile", "fixed", "-n", "1", "--slo", "exact>=0.8"]).output().unwrap();
    assert_eq!(bench.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bench.stderr).contains(said), "{}", String::from_utf8_lossy(&bench.stderr));
}

/// `--attainment` beside percentile objectives alone: each objective is
/// judged by its own percentile, so `report` and `bench` refuse the flag
/// (it had added a rule that every request be within the threshold, and
/// failed a p50 its p50 passed). Two attainments, the SLO's and the flag's,
/// are refused with both named (the flag had silently won). With a
/// per-request limit the flag is the limits' target, as before.
#[test]
fn attainment_beside_objectives_alone_or_against_the_slos_own_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = run_without_records(dir.path());
    let report = |args: &[&str]| {
        let o = goodput().arg("report").arg(&out).arg("--records").arg(&rec).args(args).output().unwrap();
        (o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    // The fixed 5 ms TTFT: a p50 within 1 s passes.
    let (code, err) = report(&["-q", "--slo", "ttft:p50<=1s", "--fail-on-slo"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = report(&["-q", "--slo", "ttft:p50<=1s", "--attainment", "0.99", "--fail-on-slo"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--attainment 99%") && err.contains("'ttft:p50<=1s' has objectives alone"), "{err}");
    assert!(err.contains("ttft:p50<=1s,attainment>=99%"), "the SLO that asks for it: {err}");
    let err = goodput()
        .args(["bench", "-q", "--sim-profile", "fixed", "-n", "1", "--slo", "ttft:p95<=1s", "--attainment", "95%"])
        .refusal();
    assert!(err.contains("has objectives alone"), "{err}");
    // The SLO's own term with objectives is the every-request rule, asked for.
    let (code, err) = report(&["-q", "--slo", "ttft:p50<=1s,attainment>=99%", "--fail-on-slo"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = report(&["-q", "--slo", "ttft<=1s,attainment>=60%", "--attainment", "0.8"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--attainment 80%") && err.contains("--slo's attainment>=60%"), "{err}");
    let (code, err) = report(&["-q", "--slo", "ttft<=1s,attainment>=80%", "--attainment", "0.8", "--fail-on-slo"]);
    assert_eq!(code, Some(0), "the same share twice: {err}");
    let (code, err) = report(&["-q", "--slo", "ttft<=1ms", "--attainment", "0.5", "--fail-on-slo"]);
    assert_eq!(code, Some(3), "a limit no request met, judged at the flag's target: {err}");
    // A config file's SLO with its own term is the every-request rule too,
    // and the flag wins over the file's share (it had been refused, the
    // file's term unseen).
    let config = dir.path().join("g.toml");
    std::fs::write(&config, "slo = \"ttft:p50<=1s,attainment>=90%\"\n").unwrap();
    let cfg = config.to_str().unwrap();
    let (code, err) = report(&["-q", "--config", cfg, "--attainment", "0.9", "--fail-on-slo"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = report(&["-q", "--config", cfg, "--attainment", "0.95", "--fail-on-slo"]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::write(&config, "slo = \"ttft:p50<=1s\"\n").unwrap();
    let (code, err) = report(&["-q", "--config", cfg, "--attainment", "0.9"]);
    assert!(code == Some(2) && err.contains("has objectives alone"), "{err}");
}
