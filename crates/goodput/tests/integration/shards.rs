//! A run split over several client processes (`bench --shard I/N --start-at
//! T`) and merged (`goodput merge`): three real shard processes on loopback
//! against one real `goodput serve`, merged into the run one process gives,
//! and the merges that must be refused.

#[allow(dead_code)]
use crate::cmd;

use cmd::{goodput, read_json, GoodputCommand};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A `goodput serve` process on a loopback port of its own; killed when dropped.
struct Serve {
    child: Child,
    url: String,
}

impl Serve {
    fn start() -> Serve {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("goodput"))
            .args(["serve", "--host", "127.0.0.1", "--port", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let url = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("listening on ").map(|r| r.split_whitespace().next().unwrap().to_owned()))
            .expect("serve says where it listens");
        // Keep reading what it says, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Serve { child, url }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The load of the done-test: 300 requests at 30/s, Poisson, small ones.
const LOAD: &[&str] = &["--rate", "30", "-n", "300", "--seed", "11", "--input-tokens", "64", "--output-tokens", "16"];

fn bench(url: &str, extra: &[String], out: &Path, rec: &Path) -> Child {
    Command::new(assert_cmd::cargo::cargo_bin("goodput"))
        .args(["bench", "-q", "--url", url, "--metrics-interval", "250ms"])
        .args(LOAD)
        .args(extra)
        .arg("-o")
        .arg(out)
        .arg("--records")
        .arg(rec)
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The extension of the records written as Parquet (JSON Lines where
/// goodput is built without Parquet).
const PARQUET: &str = if cfg!(feature = "parquet") { "parquet" } else { "jsonl" };

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn three_shards_merge_into_the_run_one_process_gives() {
    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    // Two servers alike: one for the shards, one for the whole run in one
    // process, so that both run at once and neither loads the other's.
    let (sharded, single) = (Serve::start(), Serve::start());
    let start_at = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 4;
    let mut children: Vec<Child> = (0..3)
        .map(|i| {
            let extra = vec!["--shard".into(), format!("{i}/3"), "--start-at".into(), start_at.to_string()];
            // Shard 2 writes its records as Parquet; merge reads either.
            let ext = if i == 2 { PARQUET } else { "jsonl" };
            bench(&sharded.url, &extra, &p(&format!("s{i}.json")), &p(&format!("s{i}.{ext}")))
        })
        .collect();
    let extra = vec!["--start-at".into(), start_at.to_string()];
    children.push(bench(&single.url, &extra, &p("one.json"), &p("one.jsonl")));
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let shards: Vec<Value> = (0..3).map(|i| read_json(&p(&format!("s{i}.json")))).collect();
    for (i, s) in shards.iter().enumerate() {
        assert_eq!(s["shard"]["index"], i as u64);
        assert_eq!(s["shard"]["run"], shards[0]["shard"]["run"], "one run identity");
        assert!(f(&s["started_unix_s"]) >= start_at as f64, "no shard starts before T");
        assert_eq!(s["server_signals"].is_object(), i == 0, "only shard 0 scrapes");
    }

    let merged = p("merged.json");
    let said = goodput()
        .args(["merge", "-q"])
        .args((0..3).map(|i| p(&format!("s{i}.json"))))
        .arg("-o")
        .arg(&merged)
        .arg("--records")
        .arg(p(&format!("merged.{PARQUET}")))
        .arg("--html")
        .arg(p("merged.html"))
        .assert()
        .success();
    let said = String::from_utf8_lossy(&said.get_output().stdout).into_owned();
    assert!(said.contains("merged from 3 of 3 shards · their clocks began within"), "{said}");
    let (m, one) = (read_json(&merged), read_json(&p("one.json")));
    assert_eq!(m["schema"], "goodput/v1");
    let q = &m["summary"]["requests"];
    assert_eq!((q["sent"].as_u64(), q["completed"].as_u64()), (Some(300), Some(300)), "{q}");
    // About 30 requests a second over the window, as the one process sent
    // the same schedule.
    let (rate, rate_one) =
        (f(&m["summary"]["throughput"]["requests_per_s"]), f(&one["summary"]["throughput"]["requests_per_s"]));
    assert!((22.0..40.0).contains(&rate), "merged {rate} req/s");
    assert!((rate / rate_one - 1.0).abs() < 0.15, "merged {rate} req/s, one process {rate_one}");
    // The same latencies within noise (a factor, not milliseconds: the
    // machine is shared).
    for metric in ["ttft_ms", "tpot_ms", "e2e_ms"] {
        let (a, b) = (f(&m["summary"][metric]["p50"]), f(&one["summary"][metric]["p50"]));
        assert!(a / b > 0.5 && a / b < 2.0, "{metric} p50: merged {a}, one process {b}");
    }
    // The server's own TTFT, from shard 0's scrapes on the merged clock.
    let cc = &m["server_signals"]["cross_check"];
    let (server, one_server) =
        (f(&cc["server_ttft_mean_ms"]), f(&one["server_signals"]["cross_check"]["server_ttft_mean_ms"]));
    assert!(server > 0.0 && server <= f(&cc["client_ttft_mean_ms"]), "{cc}");
    assert!(server / one_server > 0.5 && server / one_server < 2.0, "server TTFT {server} vs {one_server} ms");
    // How the merge was made: every shard, the spread of their starts.
    let info = &m["merge"];
    assert_eq!(info["count"], 3);
    assert_eq!(info["scrapes_from"], 0);
    let starts: Vec<f64> = shards.iter().map(|s| f(&s["started_unix_s"])).collect();
    let spread = starts.iter().cloned().fold(f64::MIN, f64::max) - starts.iter().cloned().fold(f64::MAX, f64::min);
    assert!((f(&info["clock_uncertainty_s"]) - spread).abs() < 1e-9, "{info}");
    assert_eq!(info["shards"].as_array().unwrap().iter().map(|s| s["requests"].as_u64().unwrap()).sum::<u64>(), 300);

    // The merged records are the one schedule: request i due when the one
    // process had it due, to within the shards' clock spread.
    let sched = |path: PathBuf| {
        let mut v: Vec<(u64, u64)> =
            cmd::records(&path).iter().map(|r| (r.id, r.scheduled.as_nanos() as u64)).collect();
        v.sort();
        v
    };
    let (ms, os) = (sched(p(&format!("merged.{PARQUET}"))), sched(p("one.jsonl")));
    assert_eq!(ms.iter().map(|x| x.0).collect::<Vec<_>>(), (0..300).collect::<Vec<_>>());
    for (a, b) in ms.iter().zip(&os) {
        let gap = (a.1 as f64 - b.1 as f64).abs() / 1e9;
        assert!(gap <= spread + 1e-6, "request {}: due at {} ns merged, {} ns alone", a.0, a.1, b.1);
    }

    // report, compare and --html take the merged result.
    let again = p("again.json");
    goodput()
        .args(["report"])
        .arg(&merged)
        .arg("--records")
        .arg(p(&format!("merged.{PARQUET}")))
        .arg("-o")
        .arg(&again)
        .assert()
        .success();
    let r = read_json(&again);
    assert_eq!(r["summary"], m["summary"], "report of the merged records gives the merged figures");
    assert_eq!(r["merge"], m["merge"]);
    goodput().arg("compare").arg(p("one.json")).arg(&merged).assert().success();
    assert!(std::fs::read_to_string(p("merged.html")).unwrap().contains("<html"));

    refusals(dir.path(), &p("one.json"));
}

/// The merges that are refused with exit 2 and a message naming the
/// problem, and the partial one that is allowed.
fn refusals(dir: &Path, single: &Path) {
    let p = |name: &str| dir.join(name);
    let merge = |files: &[PathBuf]| {
        let mut c = goodput();
        c.args(["merge", "-q"]).args(files).arg("-o").arg(p("x.json"));
        c
    };
    let code = |c: &mut assert_cmd::Command| c.output().unwrap().status.code();
    let s = |i: u32| p(&format!("s{i}.json"));

    // A shard of another run: another seed.
    let mut other = read_json(&s(2));
    other["config"]["load"]["seed"] = 12.into();
    other["shard"]["run"] = "0123456789abcdef".into();
    std::fs::write(p("other.json"), other.to_string()).unwrap();
    let err = merge(&[s(0), s(1), p("other.json")]).refusal();
    assert!(err.contains("shards of different runs") && err.contains("--seed differ"), "{err}");
    assert!(err.contains(" and 12)") && !err.contains("Some("), "the seeds as numbers: {err}");
    assert_eq!(code(&mut merge(&[s(0), s(1), p("other.json")])), Some(2));
    // A shard of the same flags against another model (another server):
    // it was merged as one run under the first shard's name.
    let mut other = read_json(&s(2));
    other["target"]["model"] = "another-model".into();
    std::fs::write(p("model.json"), other.to_string()).unwrap();
    let err = merge(&[s(0), s(1), p("model.json")]).refusal();
    assert!(err.contains("shards of different runs") && err.contains("another-model"), "{err}");
    // Shards whose requests were sent differently: one --no-stream, its
    // TTFTs whole responses, had been merged among streamed first tokens;
    // one with another --timeout, another header. A header is named, and
    // its value (never saved: it may be a secret) is not.
    let client = |name: &str, field: &str, value: Value| {
        let mut v = read_json(&s(1));
        assert!(v["config"]["client"].get(field).is_some(), "config.client.{field}");
        v["config"]["client"][field] = value;
        std::fs::write(p(name), v.to_string()).unwrap();
        merge(&[s(0), p(name), s(2)])
    };
    let err = client("nostream.json", "stream", false.into()).refusal();
    assert!(err.contains("shards of different runs") && err.contains("the other did not (--no-stream)"), "{err}");
    assert_eq!(code(&mut client("nostream.json", "stream", false.into())), Some(2));
    let err = client("timeout.json", "timeout", "1s".into()).refusal();
    assert!(err.contains("their --timeout differ (") && err.contains(" and 1s)"), "{err}");
    let err = client("header.json", "headers", serde_json::json!(["Authorization"])).refusal();
    assert!(err.contains("their --header names differ") && err.contains("authorization only in one"), "{err}");
    let err = client("body.json", "extra_body", serde_json::json!({"temperature": 0})).refusal();
    assert!(err.contains("their --extra-body differ (temperature: null and 0)"), "{err}");
    // Another name for the same server is one run still.
    client("url.json", "url", "http://localhost:1".into()).assert().success();
    // A start no clock gives: 1e308 had panicked the merge ("overflow when
    // adding durations"), -1e12 had merged into a window of 1e12 s.
    for (name, start) in [("far.json", 1e308), ("before.json", -1e12)] {
        let mut v = read_json(&s(1));
        v["started_unix_s"] = start.into();
        std::fs::write(p(name), v.to_string()).unwrap();
        let err = merge(&[s(0), p(name), s(2)]).refusal();
        assert!(err.contains(name) && err.contains("started_unix_s ") && err.contains("2200-01-01"), "{err}");
    }
    // ... and one within the years, which puts a shard's records past the
    // clock's horizon of 100 years.
    let mut v = read_json(&s(1));
    v["started_unix_s"] = 7e9.into();
    std::fs::write(p("late.json"), v.to_string()).unwrap();
    let err = merge(&[s(0), p("late.json"), s(2)]).refusal();
    assert!(err.contains("late.json") && err.contains("past the 100-year horizon"), "{err}");
    // ... and one an hour before the --start-at every shard waited for:
    // merged, its window had been 3,607 s and every rate 500 times low.
    let mut v = read_json(&s(1));
    v["started_unix_s"] = (v["shard"]["start_at_unix_s"].as_f64().unwrap() - 3600.0).into();
    std::fs::write(p("early.json"), v.to_string()).unwrap();
    let err = merge(&[s(0), p("early.json"), s(2)]).refusal();
    assert!(err.contains("early.json began 3600.") && err.contains("before the run's --start-at"), "{err}");
    // A request in two shards: one shard's records given as another's.
    let mut v = read_json(&s(1));
    let first = &cmd::records(&p("s0.jsonl"))[0];
    v["requests"] = serde_json::json!([serde_json::to_value(first).unwrap()]);
    std::fs::write(p("overlap.json"), v.to_string()).unwrap();
    let err = merge(&[s(0), p("overlap.json"), s(2)]).refusal();
    assert!(err.contains(&format!("request {} is in ", first.id)) && err.contains("again in"), "{err}");
    // Shards judged by different SLOs, with none given to merge.
    let mut v = read_json(&s(1));
    v["config"]["judge"]["slo"] = "ttft<=1s".into();
    std::fs::write(p("slo.json"), v.to_string()).unwrap();
    let err = merge(&[s(0), p("slo.json"), s(2)]).refusal();
    assert!(err.contains("by 'ttft<=1s'") && err.contains("pass --slo to merge"), "{err}");
    merge(&[s(0), p("slo.json"), s(2)]).args(["--slo", "ttft<=2s"]).assert().success();
    // Shards of two builds: merged, and said.
    let mut v = read_json(&s(1));
    v["tool"]["version"] = "9.9.0".into();
    std::fs::write(p("build.json"), v.to_string()).unwrap();
    merge(&[s(0), p("build.json"), s(2)]).assert().success();
    let warnings = read_json(&p("x.json"))["warnings"].to_string();
    assert!(warnings.contains("measured by 2 goodput builds") && warnings.contains("9.9.0"), "{warnings}");
    // Shards priced differently, with no price given to merge: the first
    // shard's price (here none) had been taken in silence.
    let mut v = read_json(&s(1));
    v["config"]["judge"]["cost"] = serde_json::json!({"gpu_hour_usd": 9.0, "gpus": 8});
    std::fs::write(p("priced.json"), v.to_string()).unwrap();
    let err = merge(&[s(0), p("priced.json"), s(2)]).refusal();
    assert!(err.contains("at no price") && err.contains("$9/GPU-hour") && err.contains("--gpu-hour-usd"), "{err}");
    merge(&[s(0), p("priced.json"), s(2)]).args(["--gpu-hour-usd", "2", "--gpus", "8"]).assert().success();
    // A config that gives no price does not stand for one (an SLO alone had
    // let differently priced shards through).
    let slo_only = p("slo.toml");
    std::fs::write(&slo_only, "slo = \"ttft<=2s\"\n").unwrap();
    let err = merge(&[s(0), p("priced.json"), s(2)]).arg("--config").arg(&slo_only).refusal();
    assert!(err.contains("--gpu-hour-usd"), "{err}");
    // One price on different GPU counts: refused without a count, and the
    // count given is the merged run's (it had been refused, then ignored).
    let priced = |gpus: u32, name: &str| {
        let mut v = read_json(&s(gpus % 3));
        v["config"]["judge"]["cost"] = serde_json::json!({"gpu_hour_usd": 9.0, "gpus": gpus});
        v["cost"] = serde_json::Value::Null;
        std::fs::write(p(name), v.to_string()).unwrap();
        p(name)
    };
    let (g0, g1, g2) = (priced(3, "g0.json"), priced(4, "g1.json"), priced(8, "g2.json"));
    let err = merge(&[g0.clone(), g1.clone(), g2.clone()]).refusal();
    assert!(err.contains("pass --gpus"), "{err}");
    merge(&[g0, g1, g2]).args(["--gpus", "4"]).assert().success();
    let cost = &read_json(&p("x.json"))["cost"];
    assert_eq!((cost["gpus"].as_u64(), cost["gpu_hour_usd"].as_f64()), (Some(4), Some(9.0)), "{cost}");
    // A run that is no shard.
    let err = merge(&[s(0), single.to_owned()]).refusal();
    assert!(err.contains("is not a shard's result"), "{err}");
    // A missing index, a duplicated one.
    let err = merge(&[s(0), s(2)]).refusal();
    assert!(err.contains("1 of the 3 shards is missing (1/3)") && err.contains("--allow-partial"), "{err}");
    assert_eq!(code(&mut merge(&[s(0), s(2)])), Some(2));
    let err = merge(&[s(0), s(1), s(1), s(2)]).refusal();
    assert!(err.contains("shard 1/3 is given twice"), "{err}");
    // A count no run splits into (it had aborted the merge allocating 16 GB).
    let mut huge = read_json(&s(0));
    huge["shard"]["count"] = 1_000_000_000u64.into();
    std::fs::write(p("huge.json"), huge.to_string()).unwrap();
    let err = merge(&[p("huge.json")]).arg("--allow-partial").refusal();
    assert!(err.contains("one of 1000000000 shards") && err.contains("at most 10000"), "{err}");
    // A records file that is not there (nor beside its result).
    let moved = dir.join("elsewhere");
    std::fs::create_dir(&moved).unwrap();
    std::fs::copy(s(1), moved.join("s1.json")).unwrap();
    std::fs::rename(p("s1.jsonl"), p("s1.moved")).unwrap();
    let err = merge(&[s(0), moved.join("s1.json"), s(2)]).refusal();
    let rec = read_json(&s(1))["shard"]["records"].as_str().unwrap().to_owned();
    assert!(err.contains("the records of shard 1/3") && err.contains(&rec), "{err}");
    assert_eq!(code(&mut merge(&[s(0), moved.join("s1.json"), s(2)])), Some(2));
    // Beside its result, where it was written: the one place is named once
    // (it had read "looked for s1.jsonl and s1.jsonl").
    let err = merge(&[s(0), s(1), s(2)]).refusal();
    assert!(err.contains(&format!("looked for {rec}. Copy")), "{err}");
    // Spelled apart (the result given as ./s1.json from its folder, the
    // records named by their whole path), the same place is named once.
    let mut relative = merge(&[s(0), PathBuf::from("./s1.json"), s(2)]);
    let err = relative.current_dir(dir).refusal();
    assert!(err.contains(&format!("looked for {rec}. Copy")), "{err}");
    // ... found beside its result once copied there.
    std::fs::copy(p("s1.moved"), moved.join("s1.jsonl")).unwrap();
    merge(&[s(0), moved.join("s1.json"), s(2)]).assert().success();
    // ... and refused when it holds fewer records than its result counts
    // (cut at a line's end, it had been merged, its requests dropped).
    let whole = std::fs::read_to_string(p("s1.moved")).unwrap();
    let cut: String = whole.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(moved.join("s1.jsonl"), cut).unwrap();
    let err = merge(&[s(0), moved.join("s1.json"), s(2)]).refusal();
    assert!(err.contains("holds 2 records, where its shard's result") && err.contains("cut short"), "{err}");
    std::fs::rename(p("s1.moved"), p("s1.jsonl")).unwrap();
    // Nor does a merge write over a shard's own files.
    let err = goodput().arg("merge").args([s(0), s(1), s(2)]).arg("-o").arg(s(0)).refusal();
    assert!(err.contains("a shard's result"), "{err}");
    let err =
        goodput().arg("merge").args([s(0), s(1), s(2)]).arg("--records").arg(p(&format!("s2.{PARQUET}"))).refusal();
    assert!(err.contains("a shard's records"), "{err}");
    // An interrupted shard (SIGTERM, say) is merged, and the merge says so.
    let mut stopped = read_json(&s(2));
    stopped["interrupted"] = true.into();
    std::fs::write(p("stopped.json"), stopped.to_string()).unwrap();
    merge(&[s(0), s(1), p("stopped.json")]).assert().success();
    let m = read_json(&p("x.json"));
    assert_eq!(m["interrupted"], true);
    assert_eq!(m["merge"]["shards"][2]["interrupted"], true);
    assert!(m["warnings"].to_string().contains("shard 2/3 was stopped early"), "{}", m["warnings"]);
    // --allow-partial merges what is there and says what is missing.
    merge(&[s(0), s(2)]).arg("--allow-partial").assert().success();
    let part = read_json(&p("x.json"));
    assert_eq!(part["merge"]["missing"], serde_json::json!([1]));
    assert_eq!(part["summary"]["requests"]["sent"], 200);
    assert!(part["warnings"].to_string().contains("1/3 missing"), "{}", part["warnings"]);
}

/// `--shard` is checked before anything runs: an index past the count, a
/// closed loop of fewer users than shards, a shard that would write no records.
#[test]
fn shard_options_are_checked_before_the_run() {
    let err = goodput().args(["bench", "--shard", "3/3", "-o", "x.json", "--records", "x.jsonl"]).refusal();
    assert!(err.contains("0/3 … 2/3"), "{err}");
    let err = goodput().args(["bench", "-c", "2", "--shard", "0/3", "-o", "x.json", "--records", "x.jsonl"]).refusal();
    assert!(err.contains("-c 3 or more"), "{err}");
    let err = goodput().args(["bench", "--shard", "0/2", "-o", "x.json"]).refusal();
    assert!(err.contains("--records FILE"), "{err}");
    // A fresh seed in each shard would give each its own schedule and prompts.
    let err = goodput().args(["bench", "--shard", "0/2", "-o", "x.json", "--records", "x.jsonl"]).refusal();
    assert!(err.contains("the same --seed"), "{err}");
    // A shard dealt none of the requests (it had run, sent nothing, and failed).
    let args = ["bench", "-n", "3", "--shard", "5/10", "--seed", "1", "-o", "x.json", "--records", "x.jsonl"];
    let err = goodput().args(args).refusal();
    assert!(err.contains("--shard 5/10 gets none of the run's requests"), "{err}");
    let err = goodput().args(["bench", "--shard", "0/0", "-o", "x.json", "--records", "x.jsonl"]).refusal();
    assert!(err.contains("one shard or more"), "{err}");
    let err = goodput().args(["bench", "--shard", "0/20000", "-o", "x.json", "--records", "x.jsonl"]).refusal();
    assert!(err.contains("at most 10000 shards"), "{err}");
    let err = goodput().args(["bench", "--start-at", "soon"]).refusal();
    assert!(err.contains("RFC 3339"), "{err}");
}
