//! Expert and pipeline parallelism through the binary: `estimate` and
//! `sweep --estimate` take `--ep` and `--pp`, keep them in the result's
//! engine settings and count their GPUs, refuse what cannot run with the
//! fix, and `plan` searches them.

use crate::cmd;
use crate::schema::assert_valid;

use cmd::{estimate_doc, goodput, read_json, GoodputCommand};

const SHORT: [&str; 8] = ["--input-tokens", "256", "--output-tokens", "32", "-n", "64", "-c", "16"];

#[test]
fn estimate_takes_pipeline_and_expert_parallelism_and_counts_their_gpus() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, extra: &[&str]| estimate_doc(dir.path(), name, &[&SHORT[..], extra].concat());
    // Llama-3.1-70B in BF16 on two H100s as two pipeline stages.
    let pp = run("pp.json", &["--model", "llama-3.1-70b", "--pp", "2"]);
    let e = &pp["engine"]["config"];
    assert_eq!((e["pp"].as_u64(), e["tp"].as_u64(), e.get("ep")), (Some(2), Some(1), None), "{e}");
    assert_eq!(pp["energy"]["gpus"].as_u64(), Some(2));
    assert_eq!(pp["energy"]["provisioned_w"].as_f64(), Some(1400.0));
    assert!(pp["target"]["url"].as_str().unwrap().contains("@1x2x1x"), "{}", pp["target"]["url"]);
    // Qwen3-30B-A3B's experts over four data-parallel ranks: one engine.
    let ep = run("ep.json", &["--model", "qwen3-30b-a3b", "--dp", "4", "--ep", "4"]);
    let e = &ep["engine"]["config"];
    assert_eq!((e["ep"].as_u64(), e["dp"].as_u64(), e.get("pp")), (Some(4), Some(4), None), "{e}");
    assert_eq!(ep["energy"]["gpus"].as_u64(), Some(4));
    assert_eq!(ep["summary"]["requests"]["completed"].as_u64(), Some(64));
    // A mixture of experts carries its throughput's error on the tables
    // held out; the dense 70B does not.
    let notes = ep["engine"]["notes"].to_string();
    assert!(notes.contains("Qwen3-30B-A3B is a mixture of experts"), "{notes}");
    assert!(!pp["engine"]["notes"].to_string().contains("mixture of experts"), "{}", pp["engine"]["notes"]);
    // Each of its four ranks keeps its own cache, a quarter of the group's:
    // the most one request holds. A group of one rank (TP = EP) has no share.
    let (whole, rank) = (ep["engine"]["kv_capacity_tokens"].as_u64().unwrap(), ep["engine"]["kv_rank_tokens"].as_u64());
    assert_eq!(rank.map(|r| whole / r), Some(4), "{}", ep["engine"]);
    let one = run("ep-one.json", &["--model", "qwen3-30b-a3b", "--tp", "4", "--ep", "4"]);
    assert!(one["engine"].get("kv_rank_tokens").is_none(), "{}", one["engine"]);
    // The target names the expert-parallel degree, and a disaggregated
    // engine's stages (both had been left out: `--ep 4` read as `--dp 4`).
    assert!(ep["target"]["url"].as_str().unwrap().ends_with("@4x1xH100 SXM/ep4"), "{}", ep["target"]["url"]);
    let pd = run("pdpp.json", &["--model", "llama-3.1-70b", "--pd", "1:1", "--pp", "2", "--precision", "fp8"]);
    assert!(pd["target"]["url"].as_str().unwrap().contains("@1p1dx2x1xH100"), "{}", pd["target"]["url"]);
    // Neither: the settings carry no ep or pp at all.
    let plain = run("plain.json", &[]);
    assert!(plain["engine"]["config"].get("ep").is_none() && plain["engine"]["config"].get("pp").is_none());
    for (doc, what) in [(&pp, "estimate --pp"), (&ep, "estimate --ep"), (&plain, "estimate")] {
        assert_valid(doc, "RunResult", what);
    }
}

#[test]
fn estimate_refuses_what_cannot_run_with_the_fix() {
    let refuse = |args: &[&str]| goodput().args(["estimate", "-n", "1"]).args(args).refusal();
    let err = refuse(&["--ep", "2", "--dp", "2"]);
    assert!(err.contains("dense model") && err.contains("drop --ep"), "{err}");
    let err = refuse(&["--pp", "33"]);
    assert!(err.contains("--pp 33 exceeds") && err.contains("32 layers"), "{err}");
    let err = refuse(&["--model", "mixtral-8x7b", "--ep", "3", "--dp", "3"]);
    assert!(err.contains("does not divide") && err.contains("8 experts"), "{err}");
    // A model that fits nowhere on one GPU is told of the stages and the
    // expert-parallel group that would hold it.
    let err = refuse(&["--model", "llama-3.1-70b"]);
    assert!(err.contains("--pp 2"), "{err}");
    let err = refuse(&["--model", "qwen3-235b-a22b", "--precision", "fp8"]);
    assert!(err.contains("--ep 4 --dp 4"), "{err}");
    // Knobs that had been taken and dropped without a word.
    let err = refuse(&["--spec-acceptance", "0.9", "--spec-draft-cost", "0.5"]);
    assert!(err.contains("add --spec-tokens"), "{err}");
    let err = refuse(&["--router", "prefix-aware"]);
    assert!(err.contains("--router prefix-aware picks among --dp replicas"), "{err}");
    // Chunked prefill off: a budget below the context is refused as vLLM
    // refuses it (it had been taken, and every longer prompt failed), and
    // none given is the context (a 10,000-token prompt had failed against
    // 8,192); TensorRT-LLM's scheduler keeps its 8,192 and refuses the
    // prompt, as TensorRT-LLM does.
    let err = refuse(&["--no-chunked-prefill", "--max-num-batched-tokens", "100"]);
    assert!(err.contains("smaller than Llama-3.1-8B's context (131072 tokens) with chunked prefill off"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let long = ["-n", "4", "-c", "2", "--input-tokens", "10000", "--output-tokens", "8", "--no-chunked-prefill"];
    let run = estimate_doc(dir.path(), "whole.json", &long);
    assert_eq!(run["summary"]["requests"]["completed"].as_u64(), Some(4), "{}", run["summary"]["requests"]);
    assert_eq!(run["engine"]["config"]["max_num_batched_tokens"].as_u64(), Some(131072));
    let o = goodput().args(["estimate", "-q", "--scheduler", "trtllm"]).args(long).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("exceeds the 8192-token step budget"), "{o:?}");
    // The embedded engine's refusals name the --sim-* flag that was typed.
    let err = goodput().args(["bench", "-n", "1", "--sim-tp", "3"]).refusal();
    assert!(err.contains("--sim-tp 3 does not divide"), "{err}");
    let err = goodput().args(["bench", "-n", "1", "--sim-profile", "fixed", "--sim-tokens-per-chunk", "0"]).refusal();
    assert!(err.contains("--sim-tokens-per-chunk must be"), "{err}");
    // A run too big to hold is refused before anything is drawn (it once
    // aborted allocating 80 GB for -n 1000000000), as is one whose answers
    // would take more memory than a run may, and an open loop's schedule
    // past the bound (it was cut there without a word).
    let err = goodput().args(["estimate", "-n", "1000000000", "-c", "1"]).refusal();
    assert!(
        err.contains("1000000000 requests") && err.contains("at most 2000000") && err.contains("fewer -n"),
        "{err}"
    );
    let err = goodput().args(["estimate", "-n", "100000", "-c", "4", "--output-tokens", "100000"]).refusal();
    assert!(err.contains("240.3 GB in memory (100000 requests of 10000000000 output tokens"), "{err}");
    let err = goodput().args(["estimate", "--duration", "2h", "--rate", "1000"]).refusal();
    assert!(err.contains("over 2000000 requests") && err.contains("a lower --rate"), "{err}");
    // A sweep's stages are bounded as they are drawn (1e8/1s aborted
    // allocating 4 GB), and a billion users cost nothing until they send
    // (the dispatcher held a join time for each: 8 GB).
    let err = goodput().args(["sweep", "--estimate", "--stages", "1e8/1s", "--output-tokens", "16"]).refusal();
    assert!(err.contains("about 100000000 requests") && err.contains("shorter stages"), "{err}");
    // Stages whose ramp-up covers them, an endless rate, and users too
    // many to pilot: each said with its cause (it had been "no point
    // completed a request", "a shorter --warmup" with none given, "above
    // zero" for inf, and "fewer -n" with no -n).
    for (stages, extra, says) in [
        ("10/1s", "--ramp-up=5s", "the --ramp-up of 5 s is as long as the stages (1 s in all)"),
        ("c=4/1s", "--ramp-up=5s", "give a shorter --ramp-up"),
        ("inf/2s", "--seed=1", "a stage holds a finite load (inf sends everything at once)"),
        ("c=4294967296/1s", "--seed=1", "is piloted with 42949672960 requests (10 a user)"),
    ] {
        let err = goodput().args(["sweep", "--estimate", "--stages", stages, extra]).refusal();
        assert!(err.contains(says), "{stages} {extra}: {err}");
    }
    let err = goodput().args(["sweep", "--stages", "3000/24h", "--output-tokens", "16"]).refusal();
    assert!(err.contains("about 259200000 requests") && err.contains("at most 10000000;"), "{err}");
    goodput()
        .args(["sweep", "--estimate", "-q", "--concurrency", "1000000000", "-n", "20", "--output-tokens", "16"])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
    // A live client's flag on a sweep of the engine alone is refused, not
    // dropped: --no-stream's TTFT would have been a streamed one.
    // The default's value typed is given all the same (--timeout 120s).
    for flag in [
        &["--no-stream"][..],
        &["--timeout", "1ms"],
        &["--timeout", "120s"],
        &["--metrics-url", "http://127.0.0.1:9/metrics"],
    ] {
        let err = goodput().args(["sweep", "--estimate", "--concurrency", "2", "-n", "20"]).args(flag).refusal();
        assert!(err.contains(&format!("{} is for a live server", flag[0])) && err.contains("drop --estimate"), "{err}");
    }
    // So is the embedded simulator's: the estimate's engine has its own
    // flags (--sim-tp 2 had run TP 1), and --serve-cmd starts the servers
    // (each configuration had been refused as if --url were given).
    for (flag, instead) in [
        (&["--sim-tp", "2"][..], "give --tp instead"),
        (&["--sim-engine", "--pp 2"], "give the flags in it as they are"),
        (&["--sim-profile", "fixed"], "not fixed timings"),
    ] {
        let err = goodput().args(["sweep", "--estimate", "--concurrency", "2", "-n", "20"]).args(flag).refusal();
        assert!(err.contains(&format!("{} sets up the embedded simulator", flag[0])) && err.contains(instead), "{err}");
    }
    let err = goodput()
        .args([
            "sweep",
            "--serve-cmd",
            "true {port}",
            "--concurrency",
            "2",
            "-n",
            "20",
            "-o",
            "x.json",
            "--sim-gpu",
            "h200",
        ])
        .refusal();
    assert!(err.contains("--sim-gpu sets up the embedded simulator, and --serve-cmd starts the servers"), "{err}");
    // A count that takes longer than any run to send at its rate (its sends
    // had piled up at the horizon: 15 in flight at once for 1e-9/s).
    let err = goodput().args(["sweep", "--estimate", "--rate", "1e-9", "-n", "20"]).refusal();
    assert!(err.contains("20 requests at --rate 1e-9 take about 634 years") && err.contains("fewer -n"), "{err}");
    // Flags another mode of sweep reads are refused, not dropped, as is a
    // point named twice.
    for (args, says) in [
        (&["--concurrency", "1,2", "--points", "3"][..], "--points spreads --auto's rates"),
        (&["--concurrency", "1,2", "--points", "6"], "--points spreads --auto's rates"),
        (&["--concurrency", "1", "--arrival", "gamma", "--burstiness", "1"], "--arrival shapes open-loop arrivals"),
        (&["--concurrency", "1", "--arrival", "poisson"], "--arrival shapes open-loop arrivals"),
        (&["--concurrency", "1,2", "--max-concurrency", "1"], "a closed loop's users are its own cap"),
        (&["--concurrency", "1", "--arrival", "gamma"], "--arrival shapes open-loop arrivals"),
        (&["--stages", "10/1s", "--search-steps", "5"], "--search-steps places points"),
        (&["--concurrency", "1,1,1"], "'1,1,1' names 1 twice"),
        (&["--rate", "2,2"], "'2,2' names 2 twice"),
        (&["--concurrency", "1,2", "--records", "-"], "a sweep writes one records file a point"),
        (&["--auto", "--points", "100000"], "--auto spreads at most 100 rates"),
    ] {
        let err = goodput().args(["sweep", "--estimate"]).args(args).refusal();
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // 20 requests open no more than 20 streams, whatever -c says.
    goodput()
        .args(["bench", "-q", "-c", "1000000000", "-n", "20", "--output-tokens", "16"])
        .timeout(std::time::Duration::from_secs(60))
        .assert()
        .success();
}

#[test]
fn sweep_estimate_takes_the_knobs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    goodput()
        .args(["sweep", "--estimate", "-q", "--concurrency", "1,8", "-n", "16", "--input-tokens", "128"])
        .args(["--output-tokens", "16", "--model", "llama-3.1-70b", "--pp", "2", "--gpu-hour-usd", "2"])
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    let v = read_json(&out);
    let text = v.to_string();
    assert!(text.contains("\"pp\":2"), "the engine settings keep pp");
}

#[test]
fn plan_searches_pipeline_stages_and_expert_parallel_groups() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("plan.json");
    // Llama-3.1-70B in BF16 on two H100s: TP 1 holds it only as two stages.
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-70b", "--gpu", "h100=2", "--gpus", "2", "--tp", "1,2"])
        .args(["--precision", "bf16", "--max-num-batched-tokens", "2048", "--input-tokens", "128"])
        .args(["--output-tokens", "16", "--concurrency", "1,8", "--requests-per-user", "2", "--jobs", "1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v = read_json(&out);
    assert_valid(&v, "FrontierResult", "plan --pp");
    let configs = v["configs"].as_array().unwrap();
    let staged = configs.iter().find(|c| c["params"]["pp"] == "2").expect("a two-stage configuration");
    assert_eq!((staged["params"]["tp"].as_str(), staged["gpus"].as_u64()), (Some("1"), Some(2)), "{staged}");
    assert!(configs.iter().any(|c| c["params"]["tp"] == "2" && c["params"].get("pp").is_none()));
    // A mixture of experts: EP 4 over four ranks of one GPU each.
    let out = dir.path().join("moe.json");
    goodput()
        .args(["plan", "-q", "--model", "qwen3-30b-a3b", "--gpu", "h100=2", "--gpus", "4", "--tp", "1"])
        .args(["--ep", "1,4", "--precision", "bf16", "--max-num-batched-tokens", "2048", "--input-tokens", "128"])
        .args(["--output-tokens", "16", "--concurrency", "1,8", "--requests-per-user", "2", "--jobs", "1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let v = read_json(&out);
    assert_valid(&v, "FrontierResult", "plan --ep");
    let configs = v["configs"].as_array().unwrap();
    let ep = configs.iter().find(|c| c["params"]["ep"] == "4").expect("an expert-parallel configuration");
    assert_eq!(ep["gpus"].as_u64(), Some(4));
    assert!(ep["points"].as_array().unwrap().iter().all(|p| p["output_tokens_per_s"].as_f64().unwrap() > 0.0));
    assert!(configs.iter().any(|c| c["params"].get("ep").is_none()));
    // EP on a dense model is left out, and said so.
    let out = dir.path().join("dense.json");
    goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "2", "--tp", "1", "--ep", "1,2"])
        .args(["--precision", "bf16", "--max-num-batched-tokens", "2048", "--input-tokens", "64"])
        .args(["--output-tokens", "8", "--concurrency", "1", "--requests-per-user", "2", "--jobs", "1", "-o"])
        .arg(&out)
        .assert()
        .success();
    let notes = read_json(&out)["notes"].to_string();
    assert!(notes.contains("dense model") && notes.contains("EP left out"), "{notes}");
}

/// Flags the engine's own sizes leave with nothing to set are refused with
/// the fix (each had been accepted and had changed nothing): `--tp` beside
/// a `--pd` that names both pools' TP, `--router` before the one engine an
/// expert-parallel group makes of its `--dp` ranks, and a `--gpus` other
/// than the GPUs the engine runs on (cost said "× 3", energy "1 GPU").
#[test]
fn estimate_refuses_flags_the_engine_s_own_sizes_leave_nothing_to_set() {
    let run = ["estimate", "-q", "-n", "8", "-c", "4", "--input-tokens", "64", "--output-tokens", "8"];
    let refuse = |args: &[&str]| goodput().args(run).args(args).refusal();
    let err = refuse(&["--pd", "4xTP1:1xTP4", "--tp", "2"]);
    assert!(
        err.contains("--pd 4xTP1:1xTP4 names both pools' tensor parallelism, so --tp 2 sets nothing: drop --tp"),
        "{err}"
    );
    // Typed at its default too; not typed, or with one pool's TP named, --tp counts.
    assert!(refuse(&["--pd", "4xTP1:1xTP4", "--tp", "1"]).contains("so --tp 1 sets nothing"));
    goodput().args(run).args(["--pd", "4xTP1:1xTP4"]).assert().success();
    goodput().args(run).args(["--pd", "1:1xTP4", "--tp", "2"]).assert().success();
    let err = goodput().args(["bench", "-q", "-n", "1", "--sim-pd", "1xTP1:1xTP2", "--sim-tp", "2"]).refusal();
    assert!(err.contains("--sim-pd 1xTP1:1xTP2 names both pools'") && err.contains("drop --sim-tp"), "{err}");

    let moe = ["--model", "qwen3-30b-a3b", "--ep", "4"];
    let err = refuse(&[&moe[..], &["--dp", "4", "--router", "round-robin"]].concat());
    assert!(
        err.contains("--router round-robin picks among engines, and --ep 4 over --tp 1 makes the --dp 4 ranks one")
            && err.contains("(--dp 8 for two), or drop --router"),
        "{err}"
    );
    goodput().args(run).args(moe).args(["--dp", "8", "--router", "round-robin"]).assert().success();

    let err = refuse(&["--gpu-hour-usd", "2", "--gpus", "3"]);
    assert!(
        err.contains("--gpus 3 contradicts the simulated engine, which runs on 1 GPU(s) (--tp 1 × --pp 1 × --dp 1)")
            && err.contains("drop --gpus"),
        "{err}"
    );
    // Under --pd the pools are named as given, the prefill pool's own sizes
    // too, and the way out is --pd's (--dp is refused beside it).
    let err = refuse(&["--model", "qwen3-30b-a3b", "--pd", "1xEP2:1xEP4", "--gpus", "3"]);
    assert!(err.contains("runs on 6 GPU(s) (its --pd 1xEP2:1xEP4 pools)"), "{err}");
    assert!(err.contains("size the pools in --pd") && !err.contains("--dp"), "{err}");
    let err = refuse(&["--pd", "2xTP2:1xTP4", "--gpus", "3"]);
    assert!(err.contains("runs on 8 GPU(s) (its --pd 2xTP2:1xTP4 pools)"), "{err}");
    // Pools of different EP are told apart by the run's name.
    let dir = tempfile::tempdir().unwrap();
    let url = |pd: &str| {
        let out = dir.path().join(format!("{pd}.json"));
        goodput().args(run).args(["--model", "qwen3-30b-a3b", "--pd", pd, "-o"]).arg(&out).assert().success();
        read_json(&out)["target"]["url"].as_str().unwrap().to_string()
    };
    let names = [url("1xEP2:1xEP2"), url("1xEP2:1xEP4"), url("1:1xEP2")];
    assert!(names[0].ends_with("/ep2") && names[1].ends_with("/ep2+4") && names[2].ends_with("/ep1+2"), "{names:?}");

    // The engine's own count, typed, is priced as the engine counts it.
    let out = dir.path().join("four.json");
    goodput()
        .args(run)
        .args(["--tp", "2", "--dp", "2", "--gpus", "4", "--gpu-hour-usd", "2", "-o"])
        .arg(&out)
        .assert()
        .success();
    let doc = read_json(&out);
    assert_eq!((doc["cost"]["gpus"].as_u64(), doc["energy"]["gpus"].as_u64()), (Some(4), Some(4)), "{doc}");
}

/// `estimate --spec-tokens` reports the acceptance its draws achieved, as a
/// live run reports a server's counters: the first position near
/// --spec-acceptance, the later ones falling, and all draft tokens' share
/// lower still. It had reported none.
#[test]
fn estimate_reports_the_speculative_acceptance_it_achieved() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("spec.json");
    let o = goodput()
        .args(["estimate", "--spec-tokens", "3", "--spec-acceptance", "0.7", "--seed", "1"])
        .args(SHORT)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    let v = read_json(&out);
    let sd = &v["engine"]["spec_decode"];
    let by: Vec<f64> = sd["acceptance_by_position"].as_array().unwrap().iter().map(|a| a.as_f64().unwrap()).collect();
    assert_eq!(by.len(), 3, "{sd}");
    // 0.7, 0.49, 0.343 in expectation over some 800 proposals (seeded).
    assert!((by[0] - 0.7).abs() < 0.05 && by[1] < by[0] && by[2] < by[1], "{sd}");
    let length = sd["mean_accepted_length"].as_f64().unwrap();
    assert!((length - 1.0 - by.iter().sum::<f64>()).abs() < 1e-9, "{sd}");
    // Accepted over proposed, where a proposal near a request's end holds
    // fewer than 3: about 0.51, well under the first position's.
    let (drafts, tokens) = (sd["drafts"].as_f64().unwrap(), sd["draft_tokens"].as_f64().unwrap());
    let rate = sd["acceptance_rate"].as_f64().unwrap();
    assert!((rate - (length - 1.0) * drafts / tokens).abs() < 1e-9 && rate < 0.6, "{sd}");
    assert!(said.contains("speculative decoding: ") && said.contains("of draft tokens accepted"), "{said}");
    crate::schema::assert_valid(&v, "RunResult", "estimate --spec-tokens");
    // Without speculation: no block.
    let plain = estimate_doc(dir.path(), "plain.json", &SHORT);
    assert!(plain["engine"].get("spec_decode").is_none(), "{}", plain["engine"]);
}

/// The served engine's banner names a rank's GPUs as a rank's where
/// data-parallel ranks share an expert-parallel group: it had read
/// "… EP 4 (experts over 4 GPUs, 2 ranks stepped together) · 2× H100 SXM" for
/// four GPUs.
#[test]
fn the_banner_of_an_expert_parallel_group_names_a_rank_s_gpus_as_a_rank_s() {
    let args = ["--profile", "engine", "--model", "mixtral-8x7b", "--tp", "2", "--dp", "2", "--ep", "4"];
    let (_, said, _server) = crate::cmd::serve(&args);
    assert!(said.contains("EP 4 (experts over 4 GPUs, 2 ranks stepped together) · each rank 2× H100 SXM"), "{said}");
    // A request lives on one rank: the banner gives that rank's share of the cache.
    let cache = |said: &str, after: &str| -> u64 {
        let rest = &said[said.find(after).unwrap_or_else(|| panic!("{after}: {said}")) + after.len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
    };
    let (whole, rank) = (cache(&said, "KV cache "), cache(&said, "tokens ("));
    assert!(said.contains(" a rank, the most one request holds)") && rank * 2 == whole, "{said}");
    // With pipeline stages, the stages are a rank's too.
    let (_, said, _server) = crate::cmd::serve(&[&args[..], &["--pp", "2"]].concat());
    assert!(said.contains("2 ranks stepped together) · each rank 2 stages of 2× H100 SXM"), "{said}");
    // SGLang's scheduler is named, and its choice of rank where it is not
    // its default.
    let sglang = [&args[..], &["--scheduler", "sglang", "--load-balance-method", "total-tokens"]].concat();
    let (_, said, _server) = crate::cmd::serve(&sglang);
    assert!(
        said.contains(
            " sequences · SGLang's scheduler (ranks by total-tokens) · scheduled a step ahead · chat template"
        ),
        "{said}"
    );
    // Each pool's, disaggregated.
    let pools = ["--profile", "engine", "--model", "qwen3-30b-a3b", "--tp", "1", "--ep", "2", "--pd", "1:1"];
    let (_, said, _server) = crate::cmd::serve(
        &[&pools[..], &["--scheduler", "sglang", "--load-balance-method", "auto:total-tokens"]].concat(),
    );
    assert!(said.contains("SGLang's scheduler (ranks by auto:total-tokens)"), "{said}");
    // A dense model's replicas behind SGLang's controller.
    let dense = ["--profile", "engine", "--dp", "2", "--scheduler", "sglang", "--load-balance-method", "total-tokens"];
    let (_, said, _server) = crate::cmd::serve(&dense);
    assert!(said.contains("SGLang's scheduler (replicas by total-tokens)"), "{said}");
    assert!(said.contains("2 replicas (SGLang's controller by total-tokens) each"), "{said}");
    // A dense model's replicas behind vLLM's own front end.
    let (_, said, _server) = crate::cmd::serve(&["--profile", "engine", "--dp", "2", "--internal-lb"]);
    let own = "2 replicas (vLLM's balancer, least 4 × waiting + running, over 2 API servers) each";
    assert!(said.contains(own), "{said}");
    let one = ["--profile", "engine", "--dp", "2", "--internal-lb", "--api-server-count", "1"];
    let (_, said, _server) = crate::cmd::serve(&one);
    assert!(said.contains("2 replicas (vLLM's balancer, least 4 × waiting + running) each"), "{said}");
    // Replicas of their own already said "each".
    let (_, said, _server) = crate::cmd::serve(&["--profile", "engine", "--dp", "2"]);
    assert!(said.contains("2 replicas (least-loaded router) each 1× H100 SXM"), "{said}");
    assert!(!said.contains(" a rank, the most"), "{said}");
}
