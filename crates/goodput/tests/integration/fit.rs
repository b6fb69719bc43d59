//! Fitting the engine's constants to measurements (`estimate --validate
//! RUN.json --fit`), and planning with them (`plan --calibration`): a sweep
//! made with other constants, in virtual time and over real HTTP against
//! `goodput serve --profile engine`, is fitted back to them.

use crate::cmd;
use cmd::{goodput, read_json, serve, GoodputCommand};
use std::path::Path;

/// The constants the measured server ran with: a slower prefill and
/// decode than the shipped Hopper's (0.55 and 0.73).
const TRUTH: &str = r#"{"eta_compute": 0.35, "eta_weights": 0.5}"#;

fn fitted(path: &Path) -> (f64, f64) {
    let doc = read_json(path);
    (doc["hopper"]["eta_compute"].as_f64().unwrap(), doc["hopper"]["eta_weights"].as_f64().unwrap())
}

fn fit(dir: &Path, measured: &Path, out: &str) -> (String, std::path::PathBuf) {
    fit_constants(dir, measured, out, "eta_compute,eta_weights")
}

/// `estimate --validate MEASURED --fit DIR/OUT` of Llama-3.1-8B on an H100,
/// fitting `constants`: what it printed, and the file.
fn fit_constants(dir: &Path, measured: &Path, out: &str, constants: &str) -> (String, std::path::PathBuf) {
    fit_with(dir, measured, out, constants, &[])
}

/// [`fit_constants`] with more of estimate's flags (`extra`).
fn fit_with(dir: &Path, measured: &Path, out: &str, constants: &str, extra: &[&str]) -> (String, std::path::PathBuf) {
    let out = dir.join(out);
    let o = goodput()
        .args(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--validate"])
        .arg(measured)
        .arg("--fit")
        .arg(&out)
        .args(["--fit-constants", constants])
        .args(extra)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{said}{}", String::from_utf8_lossy(&o.stderr));
    (said, out)
}

/// The fit table's line that begins `start` (`| held out (1) |
/// ttft_ms_mean |`): its median |error| before and after, in percent.
fn before_after(said: &str, start: &str) -> (f64, f64) {
    let line = said.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no {start} in\n{said}"));
    let cells: Vec<f64> =
        line.split('|').filter_map(|c| c.trim().strip_suffix(" %")).map(|c| c.parse().unwrap()).collect();
    (cells[0], cells[1])
}

/// `goodput serve --profile engine` of Llama-3.1-8B on an H100 with the
/// constants `truth` (JSON) gives, swept live at 1, 2 and 4 users of 8
/// requests each: the sweep's document in `dir` (the server ended).
fn live_sweep(dir: &Path, truth: &str, input_tokens: &str, output_tokens: &str) -> std::path::PathBuf {
    let file = dir.join("truth.json");
    std::fs::write(&file, truth).unwrap();
    let (url, _, _server) = serve(&[
        "--profile".as_ref(),
        "engine".as_ref(),
        "--model".as_ref(),
        "llama-3.1-8b".as_ref(),
        "--gpu".as_ref(),
        "h100".as_ref(),
        "--calibration".as_ref(),
        file.as_os_str(),
    ]);
    let sweep = dir.join("sweep.json");
    goodput()
        .args(["sweep", "-q", "--url", &url, "--concurrency", "1,2,4", "-n", "8"])
        .args(["--input-tokens", input_tokens, "--output-tokens", output_tokens, "-o"])
        .arg(&sweep)
        .assert()
        .success();
    sweep
}

/// `estimate -q -o DIR/NAME` of Llama-3.1-8B on an H100 with `args`, run
/// in `dir`: the document.
fn estimated(dir: &Path, name: &str, args: &[&str]) -> std::path::PathBuf {
    let out = dir.join(name);
    goodput()
        .current_dir(dir)
        .args(["estimate", "-q", "--model", "llama-3.1-8b", "--gpu", "h100"])
        .args(args)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
    out
}

/// `estimate --validate RUN` of the same engine, run in `from`: what it
/// printed and what it told.
fn validated(run: &Path, from: &Path) -> (String, String) {
    let o = goodput()
        .current_dir(from)
        .args(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--validate"])
        .arg(run)
        .output()
        .unwrap();
    let (said, told) =
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned());
    assert!(o.status.success(), "{said}{told}");
    (said, told)
}

/// The error, in percent, of the row `stem` + `metric` (`p1-concurrency-64-`,
/// `ttft_ms_mean`) in the validator's table `said`.
fn row_error(said: &str, stem: &str, metric: &str) -> f64 {
    let line = said.lines().find(|l| l.starts_with(&format!("| {stem}{metric} |"))).unwrap_or_else(|| panic!("{said}"));
    line.split('|').nth(6).unwrap().trim().trim_end_matches(" %").parse().unwrap()
}

/// A run whose lengths were drawn (`--preset chat`: lognormal prompts and
/// answers) is set against the engine at its requests' own lengths. At
/// their means the 64 users would send in lockstep and wait for each
/// other's prefills: the engine's own run, checked against itself, had
/// its TTFT five times too long.
#[test]
fn a_run_of_drawn_lengths_is_set_against_the_engine_at_its_own_requests_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let run = estimated(dir.path(), "chat.json", &["-c", "64", "-n", "400", "--preset", "chat"]);
    let (said, _) = validated(&run, dir.path());
    for metric in ["ttft_ms_mean", "tpot_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-concurrency-64-", metric).abs() < 5.0, "{metric}\n{said}");
    }
    // Its warm-up (the users' first wave, sent together) is sent first and
    // left out, as the run left it out.
    let warm = estimated(dir.path(), "warm.json", &["-c", "16", "-n", "200", "--warmup", "16", "--preset", "chat"]);
    let (said, _) = validated(&warm, dir.path());
    for metric in ["ttft_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-concurrency-16-", metric).abs() < 5.0, "{metric}\n{said}");
    }
    // An open loop of bursty (gamma) arrivals, capped at 8 in flight: sent
    // at the run's own times, the cap kept.
    let bursty = ["-r", "40", "-c", "8", "-n", "200", "--arrival", "gamma", "--burstiness", "0.3", "--preset", "chat"];
    let (said, _) = validated(&estimated(dir.path(), "bursty.json", &bursty), dir.path());
    for metric in ["ttft_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-rate-40-", metric).abs() < 5.0, "{metric}\n{said}");
    }

    // A dataset's prompts, of their own lengths, read again where the run
    // read them and in the order its seed shuffled them; moved, the
    // measurements are set at their means, and the note says why.
    let lines: Vec<String> = (0..40)
        .map(|i| {
            let words = vec!["word"; 40 + (i * 37) % 900].join(" ");
            format!("{{\"prompt\": \"{words}\", \"max_tokens\": {}}}", 16 + (i * 53) % 400)
        })
        .collect();
    std::fs::write(dir.path().join("prompts.jsonl"), lines.join("\n")).unwrap();
    let run = estimated(dir.path(), "dataset.json", &["-c", "16", "-n", "120", "--dataset", "prompts.jsonl"]);
    let (said, told) = validated(&run, dir.path());
    assert!(
        row_error(&said, "p1-concurrency-16-", "ttft_ms_mean").abs() < 5.0 && !told.contains("mean lengths"),
        "{said}{told}"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let (_, told) = validated(&run, elsewhere.path());
    assert!(told.contains("set at their mean lengths: its dataset is not at prompts.jsonl"), "{told}");
    // Each prompt sent three times (--repeat): the copies are the same
    // prompt, served from the prefix cache as the run's were. Set at the
    // means, each a prompt of its own, its TTFT came out three times the
    // measured (+209 %) and its throughput 25 % short; now within 7 %.
    // Over HTTP on a busy machine the bounds are wider than the engine's
    // own runs': what fails them is the cache missed, not the time.
    // (Answers are a live run's: bench against the engine's server.)
    let (url, _, _server) =
        serve(&["--profile", "engine", "--model", "llama-3.1-8b", "--gpu", "h100"].map(std::ffi::OsStr::new));
    let run = dir.path().join("repeat.json");
    goodput()
        .args(["bench", "-q", "--url", &url, "-c", "8", "-n", "48", "--repeat", "3"])
        .args(["--input-tokens", "lognormal:1024,0.5", "--output-tokens", "lognormal:32,0.3", "-o"])
        .arg(&run)
        .assert()
        .success();
    let (said, told) = validated(&run, dir.path());
    assert!(row_error(&said, "p1-concurrency-8-", "ttft_ms_mean").abs() < 40.0, "{said}{told}");
    assert!(row_error(&said, "p1-concurrency-8-", "output_tokens_per_s").abs() < 12.0, "{said}{told}");
    assert!(!told.contains("mean lengths"), "{told}");
}

/// A replayed trace is set against the engine as it was replayed: its own
/// send times, lengths and shared prefixes (goodput's `prefix_id`s,
/// Mooncake's blocks), its warm-up and its cap on requests in flight;
/// moved, the point is left out with where to put it, since no mean
/// stands in for a trace's times.
#[test]
fn a_replayed_trace_is_set_against_the_engine_at_its_own_times_lengths_and_prefixes() {
    let dir = tempfile::tempdir().unwrap();
    // Bursts of eight requests 20 ms apart, 0.4 s between bursts; prompts
    // of 500 to 3,000 tokens, a third opening with one of two 400-token
    // prefixes; answers of 20 to 300.
    let lines: Vec<String> = (0..160)
        .map(|i| {
            let at = (i / 8) as f64 * 0.4 + (i % 8) as f64 * 0.02;
            let input = 500 + (i * 733) % 2500;
            let prefix =
                if i % 3 == 0 { format!(", \"prefix_id\": {}, \"prefix_tokens\": 400", i % 2) } else { String::new() };
            format!(
                "{{\"timestamp\": {at:.3}, \"input_tokens\": {input}, \"output_tokens\": {}{prefix}}}",
                20 + (i * 97) % 280
            )
        })
        .collect();
    std::fs::write(dir.path().join("bursts.jsonl"), lines.join("\n")).unwrap();
    let run = estimated(dir.path(), "bursts.json", &["--trace", "bursts.jsonl", "--warmup", "8"]);
    let (said, told) = validated(&run, dir.path());
    let stem = said.lines().find_map(|l| l.strip_prefix("| p1-rate-")).and_then(|l| l.split('-').next());
    let stem = format!("p1-rate-{}-", stem.unwrap_or_else(|| panic!("{said}{told}")));
    for metric in ["ttft_ms_mean", "tpot_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, &stem, metric).abs() < 5.0, "{metric}\n{said}{told}");
    }
    // A sweep of the trace at three speeds on other constants is fitted
    // back to them, its middle speed held out (the trace named by its
    // whole path, read again from anywhere). Each step chosen after the
    // one before: a step ahead gives the same fit 0.348 and 0.568. The
    // validator replays the trace's own times either way, and with the
    // true constants comes within 2.2 % of every row a step ahead (1.6 %
    // without); but these points are prompt-bound, so `eta_weights`
    // barely moves the loss, and the coordinate search's narrowing passes
    // stop short along the valley where it trades with `eta_compute`
    // (its third pass still moving it, 0.573 to 0.568).
    std::fs::write(dir.path().join("truth.json"), TRUTH).unwrap();
    goodput()
        .current_dir(dir.path())
        .args(["sweep", "--estimate", "-q", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration", "truth.json"])
        .arg("--trace")
        .arg(dir.path().join("bursts.jsonl"))
        .args(["--trace-speed", "0.5,1,2", "--no-async-scheduling", "-o", "speeds.json"])
        .assert()
        .success();
    let speeds = dir.path().join("speeds.json");
    let (said, out) =
        fit_with(dir.path(), &speeds, "fitted.json", "eta_compute,eta_weights", &["--no-async-scheduling"]);
    let (eta_c, eta_w) = fitted(&out);
    assert!((eta_c / 0.35 - 1.0).abs() < 0.03 && (eta_w / 0.5 - 1.0).abs() < 0.06, "{eta_c} {eta_w}\n{said}");
    let (before, after) = before_after(&said, "| held out (1) | ttft_ms_mean |");
    assert!(before > 40.0 && after < 10.0, "{said}");
    // Mooncake's blocks, replayed twice as fast with at most 16 in flight.
    let lines: Vec<String> = (0..120)
        .map(|i| {
            let blocks = 1 + i % 6;
            let ids: Vec<String> =
                (0..blocks).map(|k| if k < 2 { k.to_string() } else { format!("{}", 100 + i * 8 + k) }).collect();
            format!(
                "{{\"timestamp\": {}, \"input_length\": {}, \"output_length\": {}, \"hash_ids\": [{}]}}",
                i * 37,
                blocks * 512 - 100,
                30 + (i * 61) % 200,
                ids.join(", ")
            )
        })
        .collect();
    std::fs::write(dir.path().join("mooncake.jsonl"), lines.join("\n")).unwrap();
    let run = estimated(dir.path(), "mooncake.json", &["--trace", "mooncake.jsonl", "--trace-speed", "2", "-c", "16"]);
    let (said, told) = validated(&run, dir.path());
    let line = said.lines().find(|l| l.starts_with("| p1-rate-")).unwrap_or_else(|| panic!("{said}{told}"));
    let stem = line[2..].split("-ttft").next().unwrap().split("-tpot").next().unwrap().split("-output").next().unwrap();
    let stem = format!("{}-", stem.trim_end_matches('-'));
    for metric in ["ttft_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, &stem, metric).abs() < 5.0, "{metric}\n{said}{told}");
    }
    // Elsewhere, the trace is not there to be read again.
    let elsewhere = tempfile::tempdir().unwrap();
    let o = goodput()
        .current_dir(elsewhere.path())
        .args(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--validate"])
        .arg(&run)
        .output()
        .unwrap();
    let told = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && told.contains("its trace is not at mooncake.jsonl: run from where the run was"),
        "{told}"
    );
}

/// A run of multi-turn sessions is set against the engine as its
/// conversations grew: each session's turns one after another, each prompt
/// the conversation so far (what the prefix cache serves), each later turn
/// after its think time; its warm-up whole sessions. As lone requests at
/// the means, the closed loop's TTFT came out nine times the measured.
#[test]
fn a_run_of_multi_turn_sessions_is_set_against_the_engine_as_its_conversations_grew() {
    let dir = tempfile::tempdir().unwrap();
    let closed = ["-c", "16", "-n", "60", "--turns", "4", "--think-time", "exponential:2s", "--warmup", "4"];
    let lengths = ["--input-tokens", "lognormal:300,0.5", "--output-tokens", "lognormal:200,0.5"];
    let run = estimated(dir.path(), "sessions.json", &[&closed[..], &lengths[..]].concat());
    let (said, told) = validated(&run, dir.path());
    for metric in ["ttft_ms_mean", "tpot_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-concurrency-16-", metric).abs() < 5.0, "{metric}\n{said}{told}");
    }
    // An open loop of sessions: each session's send time drawn again, its
    // turns after it.
    let open = ["-r", "3", "-n", "60", "--turns", "uniform:2..6", "--think-time", "1s", "--preset", "chat"];
    let (said, told) = validated(&estimated(dir.path(), "open.json", &open), dir.path());
    for metric in ["ttft_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-rate-3-", metric).abs() < 5.0, "{metric}\n{said}{told}");
    }
    // A dataset's conversations (ShareGPT's shape), each asked turn by
    // turn with its own questions and the answers' lengths: estimate takes
    // them (it had refused --turns over a --dataset), and a run of them is
    // read again where it was read.
    let words = |n: usize, w: &str| vec![w; n].join(" ");
    let chats: Vec<serde_json::Value> = (0..24)
        .map(|i| {
            let turns: Vec<serde_json::Value> = (0..1 + i % 4)
                .flat_map(|t| {
                    [
                        serde_json::json!({"from": "human", "value": words(30 + (i * 53 + t * 17) % 400, "ask")}),
                        serde_json::json!({"from": "gpt", "value": words(20 + (i * 31 + t * 7) % 300, "say")}),
                    ]
                })
                .collect();
            serde_json::json!({"id": i.to_string(), "conversations": turns})
        })
        .collect();
    std::fs::write(dir.path().join("chats.json"), serde_json::to_string(&chats).unwrap()).unwrap();
    let chats = ["-c", "8", "-n", "24", "--turns", "all", "--think-time", "200ms", "--dataset", "chats.json"];
    let (said, told) = validated(&estimated(dir.path(), "chats.json.out", &chats), dir.path());
    for metric in ["ttft_ms_mean", "tpot_ms_mean", "output_tokens_per_s"] {
        assert!(row_error(&said, "p1-concurrency-8-", metric).abs() < 5.0, "{metric}\n{said}{told}");
    }
}

#[test]
fn a_sweep_in_virtual_time_is_fitted_back_to_the_constants_that_made_it_and_a_plan_runs_on_them() {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.json");
    std::fs::write(&truth, TRUTH).unwrap();
    let sweep = dir.path().join("sweep.json");
    goodput()
        .args(["sweep", "--estimate", "-q", "--model", "llama-3.1-8b", "--gpu", "h100", "--calibration"])
        .arg(&truth)
        .args(["--concurrency", "1,4,16", "-n", "32", "--input-tokens", "1024", "--output-tokens", "64", "-o"])
        .arg(&sweep)
        .assert()
        .success();
    let (said, out) = fit(dir.path(), &sweep, "fitted.json");
    let (eta_c, eta_w) = fitted(&out);
    assert!((eta_c / 0.35 - 1.0).abs() < 0.03 && (eta_w / 0.5 - 1.0).abs() < 0.03, "{eta_c} {eta_w}\n{said}");
    // Three points: the first and third fitted on, the second held out
    // and predicted within 2 % once fitted (the shipped constants miss it
    // by far more).
    assert!(said.contains("| hopper | eta_compute | 0.55 |"), "{said}");
    assert!(said.contains("| held out (1) | ttft_ms_mean |"), "{said}");
    let (before, after) = before_after(&said, "| held out (1) | output_tokens_per_s |");
    assert!(before > 20.0 && after < 2.0, "{said}");

    // The plan reads the file and says what it set; its best point runs
    // slower than on the shipped constants.
    let best = |extra: &[&std::ffi::OsStr]| {
        let doc_path = dir.path().join("plan.json");
        let o = goodput()
            .args(["plan", "--model", "llama-3.1-8b", "--gpu", "h100", "--gpus", "1", "--tp", "1", "--pp", "1"])
            .args(["--precision", "bf16", "--input-tokens", "1024", "--output-tokens", "64", "--concurrency", "1,8"])
            .args(["--requests-per-user", "2", "-o"])
            .arg(&doc_path)
            .args(extra)
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert!(o.status.success(), "{text}");
        let doc = read_json(&doc_path);
        let top = doc["configs"][0]["points"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["output_tokens_per_s_per_gpu"].as_f64())
            .fold(0.0, f64::max);
        (top, text)
    };
    let (shipped, _) = best(&[]);
    let grid = dir.path().join("grid.toml");
    let (ours, text) = best(&["--calibration".as_ref(), out.as_os_str(), "--grid-out".as_ref(), grid.as_os_str()]);
    assert!(text.contains("calibration: ") && text.contains("sets hopper's eta_compute 0.35"), "{text}");
    // The grid's sweep predicts on the same constants when it measures.
    let header = std::fs::read_to_string(&grid).unwrap();
    assert!(header.contains(&format!("--calibration {}", out.display())), "{header}");
    assert!(ours < shipped * 0.85, "fitted {ours} tok/s/GPU against shipped {shipped}");
}

#[test]
fn a_live_server_measured_over_http_is_fitted_near_its_constants() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = live_sweep(dir.path(), TRUTH, "1024", "24");
    let (said, out) = fit(dir.path(), &sweep, "fitted.json");
    let (eta_c, eta_w) = fitted(&out);
    // The server ran slower than the shipped constants say, and the wall
    // clock only adds to its time (the client, the loopback, a busy
    // machine): the fit moves well below the shipped 0.55 and 0.73. How
    // far below depends on the machine, so no lower bound is asserted
    // (on an idle two-core machine: 0.41 and 0.47).
    assert!(eta_c < 0.5, "eta_compute {eta_c}\n{said}");
    assert!(eta_w < 0.65, "eta_weights {eta_w}\n{said}");
}

/// The power and memory models fitted to what a server says of itself:
/// `goodput serve --profile engine` whose memory draws 0.9 of the dynamic
/// range (the shipped model: 0.5) gives its GPUs' energy in DCGM's names,
/// and with 4 GiB a GPU kept from its cache (the shipped 0.15) its cache's
/// size in vLLM's `cache_config_info`; a live sweep scrapes both, and one
/// fit moves each constant on its own rows to near what made them.
#[test]
fn a_live_server_s_energy_counters_and_cache_size_fit_the_power_and_memory_models() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = live_sweep(dir.path(), r#"{"power_memory": 0.9, "runtime_gib": 4}"#, "512", "32");
    let doc = read_json(&sweep);
    assert_eq!(doc["points"][0]["result"]["energy"]["source"], "scraped", "{}", doc["points"][0]["result"]["energy"]);
    let cache = &doc["points"][0]["result"]["server_signals"]["window"]["gauges"]["kv_cache_tokens"];
    assert!(cache["mean"].as_f64().is_some_and(|t| t > 100_000.0), "{cache}");
    let (said, out) = fit_constants(dir.path(), &sweep, "power.json", "power_memory,runtime_gib");
    // A busy machine only adds idle time to the counters' window: the fit
    // lands at or above the share that made them, far from the shipped 0.5
    // (0.90 on an idle two-core machine).
    let fitted = read_json(&out)["hopper"]["power_memory"].as_f64().unwrap();
    assert!(fitted > 0.75, "power_memory {fitted}\n{said}");
    // The cache's size depends on no clock: the memory the engine keeps
    // is found to within a block's worth.
    let runtime = read_json(&out)["hopper"]["runtime_gib"].as_f64().unwrap();
    assert!((runtime / 4.0 - 1.0).abs() < 0.01, "runtime_gib {runtime}\n{said}");
    assert!(said.contains("| held out (1) | kv_cache_tokens |"), "{said}");
    let (before, after) = before_after(&said, "| held out (1) | joules_per_output_token |");
    assert!(after < before, "{said}");
    // Set against another configuration than the one measured (TP 2), the
    // counters of the one GPU measured give no J/token of it.
    let o = goodput()
        .args(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100", "--tp", "2", "--validate"])
        .arg(&sweep)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("the energy counters covered 1 GPUs where the configuration runs on 2"), "{err}");
    // And the server's cache, of 4 GiB less a GPU, is not TP 2's: how to set it is said.
    assert!(err.contains("note: the server's KV cache holds") && err.contains("--fit-constants runtime_gib"), "{err}");
    assert!(!String::from_utf8_lossy(&o.stdout).contains("joules_per_output_token |"), "{err}");
    // An estimate on the file says its J/token runs on those shares.
    let o = goodput()
        .args(["estimate", "--gpu", "h100", "-c", "2", "-n", "4", "--output-tokens", "8", "--calibration"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("energy: J/token runs on the power model's shares --calibration gives (hopper:"), "{err}");
}

/// A family the file names is the user's calibration, not an
/// uncalibrated guess: `estimate` and `plan` say so, and the plan no longer
/// marks its GPU; a file of constants for every GPU leaves the mark.
#[test]
fn a_family_given_its_own_constants_is_not_marked_uncalibrated() {
    let dir = tempfile::tempdir().unwrap();
    let named = dir.path().join("cdna4.json");
    std::fs::write(&named, r#"{"cdna4": {"eta_compute": 0.3, "eta_weights": 0.45}}"#).unwrap();
    let flat = dir.path().join("flat.json");
    std::fs::write(&flat, r#"{"eta_compute": 0.3}"#).unwrap();
    let estimate = |file: &Path| {
        let o = goodput()
            .args(["estimate", "--gpu", "mi355x", "-c", "1", "-n", "2", "--output-tokens", "8", "--calibration"])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };
    let said = estimate(&named);
    assert!(said.contains("runs on the constants --calibration") && !said.contains("is uncalibrated"), "{said}");
    assert!(estimate(&flat).contains("is uncalibrated"));
    let plan = |file: &Path| {
        let out = dir.path().join("plan.json");
        goodput()
            .args(["plan", "-q", "--gpu", "mi355x", "--gpu", "h100", "--gpus", "1", "--tp", "1", "--pp", "1"])
            .args(["--precision", "bf16", "--concurrency", "1", "--requests-per-user", "2", "--output-tokens", "8"])
            .arg("--calibration")
            .arg(file)
            .arg("-o")
            .arg(&out)
            .assert()
            .success();
        read_json(&out)
    };
    let doc = plan(&named);
    assert!(doc["uncalibrated_gpus"].as_array().is_none_or(|a| a.is_empty()), "{}", doc["uncalibrated_gpus"]);
    let notes = doc["notes"].to_string();
    assert!(notes.contains("sets cdna4's eta_compute 0.3, eta_weights 0.45"), "{notes}");
    let doc = plan(&flat);
    assert_eq!(doc["uncalibrated_gpus"][0], "MI355X", "{}", doc["uncalibrated_gpus"]);
}

#[test]
fn fitting_refuses_what_it_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rows.csv");
    std::fs::write(
        &csv,
        "id,model,gpu,gpus,tp,precision,engine,input_tokens,output_tokens,load_kind,load_value,metric,value,unit,source\n\
         a,llama-3.1-8b,h100-sxm,1,1,bf16,vllm,1024,64,concurrency,1,ttft_ms_mean,90,ms,mine\n",
    )
    .unwrap();
    // Without --validate, and over the file it reads.
    let err = goodput().args(["estimate", "--fit", "x.json"]).refusal();
    assert!(err.contains("--validate"), "{err}");
    let err = goodput().args(["estimate", "--validate"]).arg(&csv).arg("--fit").arg(&csv).refusal();
    assert!(err.contains("would write over") && err.contains("--validate"), "{err}");
    let err = goodput()
        .args(["estimate", "--validate"])
        .arg(&csv)
        .arg("--fit")
        .arg(dir.path().join("f.json"))
        .args(["--fit-constants", "eta_compute,step_time_cv"])
        .refusal();
    assert!(err.contains("cannot fit `step_time_cv`"), "{err}");
    // A calibration file that mixes the two forms is refused by name.
    let mixed = dir.path().join("mixed.json");
    std::fs::write(&mixed, r#"{"eta_compute": 0.4, "hopper": {"eta_kv": 0.5}}"#).unwrap();
    let err = goodput().args(["plan", "--gpu", "h100", "--gpus", "1", "--calibration"]).arg(&mixed).refusal();
    assert!(err.contains("`hopper` is a GPU family") && err.contains("not both"), "{err}");
    // A measured document against a model outside the catalog.
    let run = dir.path().join("run.json");
    goodput().args(["estimate", "-q", "-c", "1", "-n", "2", "--output-tokens", "4", "-o"]).arg(&run).assert().success();
    let err = goodput().args(["estimate", "--model", "./nowhere/config.json", "--validate"]).arg(&run).refusal();
    assert!(err.contains("not one: name the catalog's model"), "{err}");
    // A point the rows cannot hold is left out, named; a document with no
    // other point is refused, naming why each was.
    let swept = |name: &str, users: &str| {
        let out = dir.path().join(name);
        goodput()
            .args(["sweep", "--estimate", "-q", "--concurrency", users, "-n", "32", "--output-tokens", "8", "-o"])
            .arg(&out)
            .assert()
            .success();
        out
    };
    let o = goodput().args(["estimate", "--validate"]).arg(swept("sweep.json", "1,64")).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("note: point 2 left out: `requests` 32 is fewer than the 64 users"), "{err}");
    assert!(err.contains("1 point(s): all are fitted on, none held out"), "{err}");
    let err = goodput().args(["estimate", "--validate"]).arg(swept("burst.json", "64")).refusal();
    assert!(err.contains("no point can be set against the engine (point 1 left out: `requests` 32"), "{err}");
    // A predicted frontier holds nothing measured.
    let plan = dir.path().join("plan.json");
    goodput()
        .args(["plan", "-q", "--gpu", "h100", "--gpus", "1", "--tp", "1", "--pp", "1", "--precision", "bf16"])
        .args(["--concurrency", "1", "--requests-per-user", "2", "--output-tokens", "8", "-o"])
        .arg(&plan)
        .assert()
        .success();
    let err = goodput().args(["estimate", "--validate"]).arg(&plan).refusal();
    assert!(err.contains("a predicted frontier holds the engine's own figures"), "{err}");
}

/// A grid of real server processes (`goodput serve --profile engine` at
/// TP 1, 2 and 4, on the slower constants, and at TP 3, which Llama-3.1-8B's
/// heads refuse), measured by `sweep --serve-cmd`, is fitted as one: each
/// configuration on its own parallelism, the one that did not run named,
/// TP 2 held out whole and predicted on the fit.
#[test]
fn a_measured_grid_of_servers_is_fitted_with_a_configuration_held_out_whole() {
    let dir = tempfile::tempdir().unwrap();
    let truth = dir.path().join("truth.json");
    std::fs::write(&truth, TRUTH).unwrap();
    let quote = |s: &str| shlex::try_quote(s).unwrap().into_owned();
    let template = format!(
        "{} serve --port {{port}} -q --progress none --profile engine --model llama-3.1-8b --gpu h100 --calibration \
         {} --tp {{tp}}",
        quote(env!("CARGO_BIN_EXE_goodput")),
        quote(&truth.display().to_string())
    );
    let frontier = dir.path().join("frontier.json");
    goodput()
        .args(["sweep", "-q", "--serve-cmd", &template, "--serve-grid", "tp=1,2,3,4", "--concurrency", "1,2,4"])
        .args(["-n", "8", "--input-tokens", "1024", "--output-tokens", "24", "-o"])
        .arg(&frontier)
        .assert()
        .success();
    let (said, out) = fit(dir.path(), &frontier, "fitted.json");
    let (eta_c, eta_w) = fitted(&out);
    // As for one server: below the shipped 0.55 and 0.73, the wall clock
    // only adding to the servers' time.
    assert!(eta_c < 0.5 && eta_w < 0.65, "{eta_c} {eta_w}\n{said}");
    // The rows of each configuration run at its own TP: three KV caches.
    let caches: std::collections::BTreeSet<&str> =
        said.lines().filter(|l| l.starts_with("| c")).filter_map(|l| l.split('|').nth(9)).collect();
    assert_eq!(caches.len(), 3, "{said}");
    // TP 2, held out whole, is predicted better on the fit than before it.
    for metric in ["tpot_ms_mean", "output_tokens_per_s"] {
        let (before, after) = before_after(&said, &format!("| held out (3) | {metric} |"));
        assert!(after < before, "{metric}\n{said}");
    }
    assert!(said.lines().any(|l| l.starts_with("| c2-p1-concurrency-1-")), "{said}");
    let o = goodput().args(["estimate", "--validate"]).arg(&frontier).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("every other one is held out whole") && err.contains("configuration 2 (tp=2)"), "{err}");
    assert!(err.contains("note: configuration 3 (tp=3) left out: it did not run"), "{err}");
    assert!(err.contains("the rows of each configuration: c1-… configuration 1 (tp=1); c2-…"), "{err}");
    // Without the sweeps beside it, the frontier says where they go.
    std::fs::rename(dir.path().join("frontier.logs"), dir.path().join("elsewhere")).unwrap();
    let err = goodput().args(["estimate", "--validate"]).arg(&frontier).refusal();
    assert!(err.contains("01-tp=1.sweep.json") && err.contains("frontier.logs"), "{err}");
}
