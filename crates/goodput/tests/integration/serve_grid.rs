//! `goodput sweep --serve-cmd … --serve-grid …` against real servers: the
//! goodput binary's own `goodput serve` (the simulated engine, sped up with
//! --speed), started, swept and stopped by the sweep for each
//! configuration; servers that exit at once, never become ready or crash
//! mid-sweep; Ctrl-C between configurations and --resume; and no server
//! left behind, even when goodput is killed.

use crate::cmd::{goodput, read_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_goodput");

/// A `sh -c` script that logs its pid and then becomes `goodput serve` on
/// the port the template passes it as `$0`, with `args` after it.
fn serve_script(args: &str) -> String {
    format!("echo pid $$; exec {} serve --port \"$0\" -q --progress none {args}", shlex::try_quote(BIN).unwrap())
}

/// The pids the servers' logs name (`pid N`, as [`serve_script`] logs).
fn logged_pids(logs: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir(logs).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "log") {
            for l in std::fs::read_to_string(&p).unwrap().lines() {
                if let Some(n) = l.strip_prefix("pid ").and_then(|n| n.trim().parse().ok()) {
                    pids.push(n);
                }
            }
        }
    }
    pids
}

/// Whether `pid` is a live process (a zombie, ended and not yet reaped, is
/// not).
fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Waits up to 10 s for every pid to be gone.
fn assert_all_gone(pids: &[i32]) {
    let t = Instant::now();
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "servers left running: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn configs(doc: &Value) -> &Vec<Value> {
    doc["configs"].as_array().unwrap()
}

/// The figure `key` of configuration `c`'s point of most throughput.
fn at_peak(c: &Value, key: &str) -> f64 {
    let pts = c["points"].as_array().unwrap();
    let best = pts
        .iter()
        .max_by(|a, b| {
            a["output_tokens_per_s"].as_f64().unwrap().total_cmp(&b["output_tokens_per_s"].as_f64().unwrap())
        })
        .unwrap();
    best[key].as_f64().unwrap()
}

/// The load every working configuration gets: 16 users, each request a
/// long prompt (its prefill shares the steps of the others' decodes) and
/// a short answer.
const LOAD: &[&str] =
    &["--concurrency", "16", "-n", "48", "--input-tokens", "1024", "--output-tokens", "24", "--progress", "none"];

/// Three configurations of the simulated engine's batch limit: the larger
/// batch gives more throughput and less speed per user. The document,
/// logs and per-configuration sweeps are where they are said to be.
#[test]
fn a_grid_of_server_configurations_gives_a_measured_frontier() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("frontier.json");
    let csv = dir.path().join("csv");
    let html = dir.path().join("frontier.html");
    let t = Instant::now();
    let o = goodput()
        .args(["sweep", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 5 --max-num-seqs {seqs}")).unwrap()))
        .args(["--serve-grid", "seqs=1,4,16", "--slo", "ttft:p50<=60s", "--gpu-hour-usd", "2"])
        .args(LOAD)
        .arg("-o")
        .arg(&out)
        .arg("--csv")
        .arg(&csv)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    eprintln!("three configurations swept in {:.1} s", t.elapsed().as_secs_f64());
    assert!(err.contains("3 configurations: at most"), "the bound is said first: {err}");
    let doc = read_json(&out);
    assert_eq!((doc["kind"].as_str(), doc["source"].as_str()), (Some("frontier"), Some("measured")));
    assert_eq!(doc["interrupted"], false);
    let c = configs(&doc);
    let ids: Vec<&str> = c.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["seqs=1", "seqs=4", "seqs=16"]);
    for c in c {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["points"].as_array().unwrap().len(), 1);
        let p = &c["points"][0];
        assert_eq!(p["completed"], 48);
        assert!(p["usd_per_million_output_tokens"].as_f64().unwrap() > 0.0);
        assert_eq!(p["meets_slo"], true);
    }
    let (tput, user) =
        (|i: usize| at_peak(&c[i], "output_tokens_per_s"), |i: usize| at_peak(&c[i], "tokens_per_s_per_user"));
    assert!(tput(2) > 2.0 * tput(0), "16 sequences at once serve more than 1: {} vs {}", tput(2), tput(0));
    assert!(tput(1) > tput(0), "4 sequences serve more than 1");
    // One sequence at a time is faster per user: a user's token waits for a
    // step, and a step of sixteen is longer than a step of one (and writes
    // sixteen streams). The wall clock keeps that order on any machine; by
    // how much is the engine's step time, checked in virtual time below (a
    // ratio asserted here had failed on a machine whose both cores were
    // kept busy: 1.16 against 1.2, where the engine's own is 1.25).
    assert!(user(0) > user(2), "one sequence at a time is faster per user: {} vs {}", user(0), user(2));
    let tpot = |seqs: &str| {
        let doc = crate::cmd::estimate_doc(
            dir.path(),
            &format!("seqs{seqs}.json"),
            &[&["--max-num-seqs", seqs], LOAD].concat(),
        );
        doc["summary"]["tpot_ms"]["p50"].as_f64().unwrap()
    };
    let (one, sixteen) = (tpot("1"), tpot("16"));
    assert!(sixteen > 1.2 * one, "in virtual time a step of sixteen is longer: TPOT {sixteen} ms vs {one} ms");
    assert!(!doc["frontier"].as_array().unwrap().is_empty());
    assert!(doc["best"]["reason"].as_str().unwrap().contains("per dollar"));
    // Each server's log and its own sweep document, beside -o.
    let logs = dir.path().join("frontier.logs");
    for name in ["01-seqs=1", "02-seqs=4", "03-seqs=16"] {
        let log = std::fs::read_to_string(logs.join(format!("{name}.log"))).unwrap();
        assert!(log.contains("listening on http://127.0.0.1:"), "{log}");
        let sweep = read_json(&logs.join(format!("{name}.sweep.json")));
        assert_eq!(sweep["kind"], "sweep");
    }
    assert!(std::fs::read_to_string(csv.join("frontier.csv")).unwrap().lines().count() >= 4);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("seqs=16") && page.contains("<svg"), "the chart names each configuration");
    crate::schema::assert_valid(&doc, "FrontierResult", "a measured frontier");
    // The terminal's table of the frontier.
    assert!(String::from_utf8_lossy(&o.stdout).contains("measured frontier"), "{}", String::from_utf8_lossy(&o.stdout));
    assert_all_gone(&logged_pids(&logs));
}

/// A grid measured in sessions (`--turns`, as a plan of sessions writes
/// its sweep): the measured frontier and the predicted one beside it both
/// keep the sessions, and their comparison finds nothing to say of them.
#[test]
fn a_grid_measured_in_sessions_keeps_them_in_both_frontiers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sg.json");
    let o = goodput()
        .args(["sweep", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 5 --max-num-seqs {seqs}")).unwrap()))
        .args(["--serve-grid", "seqs=4", "--concurrency", "2", "-n", "4", "--turns", "2", "--think-time", "50ms"])
        .args(["--input-tokens", "32", "--output-tokens", "8", "--progress", "none", "--estimate", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let sessions = serde_json::json!({"turns": "2", "think_time": "50ms"});
    let measured = read_json(&out);
    assert_eq!(measured["sessions"], sessions);
    assert_eq!(configs(&measured)[0]["points"][0]["completed"], 8, "four sessions of two turns");
    assert_eq!(read_json(&dir.path().join("sg.predicted.json"))["sessions"], sessions);
    let compared = read_json(&dir.path().join("sg.compare.json"));
    assert!(!compared["notes"].to_string().contains("users sent"), "{}", compared["notes"]);
    assert_all_gone(&logged_pids(&dir.path().join("sg.logs")));
}

/// A configuration whose server exits at once and one whose server
/// crashes mid-sweep are each recorded as failed, with the exit status and
/// the end of the log; the configuration after them runs.
#[test]
fn failed_configurations_are_recorded_and_the_sweep_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.json");
    let srv_log = dir.path().join("crashing-server.log");
    // The server is killed a second after it listens: within the sweep's
    // first point, however long it took to start.
    let crash = format!(
        "echo pid $$; {bin} serve --port \"$0\" -q --progress none --speed 2 > {log} 2>&1 & \
         until grep -q listening {log}; do sleep 0.05; done; sleep 1; \
         echo 'CUDA error: an illegal memory access'; kill -9 $!; exit 9",
        bin = shlex::try_quote(BIN).unwrap(),
        log = shlex::try_quote(srv_log.to_str().unwrap()).unwrap()
    );
    let configs_json = serde_json::json!([
        {"case": "exits", "script": "echo pid $$; echo 'no GPU found' >&2; exit 3"},
        {"case": "crashes", "script": crash},
        {"case": "works", "script": serve_script("--speed 20")},
    ]);
    std::fs::write(&grid, configs_json.to_string()).unwrap();
    let (out, logs) = (dir.path().join("f.json"), dir.path().join("logs"));
    let o = sweep_scripts(&grid, &logs, &out, &["--concurrency", "4", "--duration", "3s"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "one configuration ran: {err}");
    let doc = read_json(&out);
    let c = configs(&doc);
    let by = |case: &str| c.iter().find(|c| c["params"]["case"] == case).unwrap_or_else(|| panic!("{case}: {doc}"));
    let exits = by("exits");
    assert_eq!((exits["status"].as_str(), exits["exit_status"].as_i64()), (Some("failed"), Some(3)));
    assert!(exits["error"].as_str().unwrap().contains("exited before it was ready"), "{exits}");
    assert!(exits["log_tail"].as_str().unwrap().contains("no GPU found"), "{exits}");
    assert!(exits["dominated"].as_str().unwrap().starts_with("failed"));
    let crashes = by("crashes");
    assert_eq!((crashes["status"].as_str(), crashes["exit_status"].as_i64()), (Some("failed"), Some(9)));
    assert!(crashes["error"].as_str().unwrap().contains("exited during the point at"), "{crashes}");
    assert!(crashes["log_tail"].as_str().unwrap().contains("illegal memory access"), "{crashes}");
    crate::schema::assert_valid(&doc, "FrontierResult", "a frontier with failed configurations");
    let works = by("works");
    assert_eq!(works["status"], "ok", "{works}");
    assert!(works["points"][0]["completed"].as_u64().unwrap() > 0);
    // Only the one that ran has points on the frontier.
    let front = doc["frontier"].as_array().unwrap();
    assert!(!front.is_empty() && front.iter().all(|p| c[p["config"].as_u64().unwrap() as usize] == *works));
    assert_all_gone(&logged_pids(&logs));
}

/// `goodput sweep` of the grid of scripts `grid` (each configuration's
/// `script` run by `sh` with its port), logs in `logs`, the frontier in
/// `out`, 16 tokens an answer, and `load`.
fn sweep_scripts(grid: &Path, logs: &Path, out: &Path, load: &[&str]) -> std::process::Output {
    goodput()
        .args(["sweep", "--serve-cmd", "sh -c {script} {port}", "--serve-grid"])
        .arg(grid)
        .arg("--serve-logs")
        .arg(logs)
        .args(load)
        .args(["--output-tokens", "16", "--progress", "none", "-o"])
        .arg(out)
        .output()
        .unwrap()
}

/// A server whose port another process took between goodput's check and
/// its bind (here a listener that never answers, started first on it)
/// exits before it is ready, saying the address is in use: it is started
/// once more on other ports and measured, the first try's log kept and the
/// document noting it. One that says so again is not started a third
/// time; one that exits for another reason is not started again.
#[test]
fn a_server_whose_port_was_taken_is_started_again_on_others() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.json");
    let (marker, held) = (dir.path().join("tried"), dir.path().join("held"));
    let q = |p: &Path| shlex::try_quote(p.to_str().unwrap()).unwrap().into_owned();
    let taken = format!(
        "if [ ! -e {m} ]; then touch {m}; GOODPUT_TEST_MUTE_PORT=\"$0\" {me} --exact serve_grid::mute_server \
         --nocapture --test-threads 1 > {h} & echo pid $!; until grep -q listening {h}; do sleep 0.05; done; fi; {}",
        serve_script("--speed 20"),
        m = q(&marker),
        h = q(&held),
        me = q(&std::env::current_exe().unwrap()),
    );
    let configs_json = serde_json::json!([
        {"case": "taken", "script": taken},
        {"case": "always", "script": "echo pid $$; echo 'OSError: [Errno 98] address already in use' >&2; exit 1"},
        {"case": "exits", "script": "echo pid $$; echo 'no GPU found' >&2; exit 3"},
    ]);
    std::fs::write(&grid, configs_json.to_string()).unwrap();
    let (out, logs) = (dir.path().join("f.json"), dir.path().join("logs"));
    let o = sweep_scripts(&grid, &logs, &out, &["--concurrency", "2", "-n", "8"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc = read_json(&out);
    let c = configs(&doc);
    assert_eq!(c[0]["status"], "ok", "{doc}");
    assert_eq!(c[0]["points"][0]["completed"].as_u64(), Some(8), "{doc}");
    // The first try's log of configuration `n`, where kept.
    let names: Vec<String> =
        std::fs::read_dir(&logs).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let kept_log = |n: &str| names.iter().find(|f| f.starts_with(n) && f.ends_with(".port-taken.log"));
    let kept =
        std::fs::read_to_string(logs.join(kept_log("01-").unwrap_or_else(|| panic!("{names:?} {doc}")))).unwrap();
    assert!(kept.contains("port is in use"), "{kept}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("case=taken")
            && notes.contains(": the server exited before it was ready because one of its ports was taken"),
        "{notes}"
    );
    assert!(err.contains("started once more on other ports"), "{err}");
    // Started twice at most; one that exits for another reason, once.
    assert_eq!((c[1]["status"].as_str(), c[1]["exit_status"].as_i64()), (Some("failed"), Some(1)), "{doc}");
    assert!(kept_log("02-").is_some(), "{names:?}");
    assert_eq!((c[2]["status"].as_str(), c[2]["exit_status"].as_i64()), (Some("failed"), Some(3)), "{doc}");
    assert!(kept_log("03-").is_none(), "{names:?}");
    assert_all_gone(&logged_pids(&logs));
}

/// A server that never becomes ready is stopped at --serve-ready-timeout,
/// and its configuration recorded as failed.
#[test]
fn a_server_never_ready_fails_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let t = Instant::now();
    let o = goodput()
        .args(["sweep", "--serve-cmd", "sh -c 'echo pid $$; exec sleep 30' {port}", "--serve-ready-timeout", "500ms"])
        .args(["--concurrency", "1", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "no configuration ran");
    assert!(t.elapsed() < Duration::from_secs(20), "{:?}", t.elapsed());
    let doc = read_json(&out);
    let hangs = &configs(&doc)[0];
    assert_eq!(hangs["status"], "failed");
    assert!(hangs["error"].as_str().unwrap().contains("not ready within 500 ms"), "{hangs}");
    // sleep ends at the SIGTERM.
    assert_eq!(hangs["exit_status"].as_i64(), Some(128 + 15), "{hangs}");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// Not a test of its own: with GOODPUT_TEST_MUTE_PORT set, the server the
/// tests below start (this test binary, run again): it takes connections on
/// that port and never answers them, as a server stuck loading does.
#[test]
fn mute_server() {
    let Ok(port) = std::env::var("GOODPUT_TEST_MUTE_PORT") else { return };
    let l = std::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    println!("pid {}\nlistening on {port}, never answering", std::process::id());
    let mut held = Vec::new();
    for c in l.incoming() {
        held.push(c);
    }
}

/// A `sh -c` script (port as `$0`) that logs its pid and becomes
/// [`mute_server`].
fn mute_script() -> String {
    let me = std::env::current_exe().unwrap();
    format!(
        "echo pid $$; GOODPUT_TEST_MUTE_PORT=\"$0\" exec {} --exact serve_grid::mute_server --nocapture \
         --test-threads 1",
        shlex::try_quote(me.to_str().unwrap()).unwrap()
    )
}

/// Runs `cmd` to its end, or kills it after `limit` and fails the test.
fn output_within(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).env_remove("OPENAI_API_KEY").spawn().unwrap();
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > limit {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!("still running after {limit:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// A server that takes connections and never answers HTTP fails at
/// --serve-ready-timeout (each probe is bounded), with its log's end; one
/// whose process exits while its socket lives on in a child, unanswered,
/// is seen to exit. (Both had hung for good on their first probe.) The
/// timeout is 10 s so that the re-run test binary is listening well before
/// it on a loaded machine; should it not be, the last probe was refused, and
/// the configuration still fails as not ready at the timeout (at 4 s a slow
/// start had failed the test on "connection refused").
#[test]
fn a_server_that_never_answers_fails_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let grid = dir.path().join("grid.json");
    let dies = format!("{} & sleep 1; exit 5", mute_script().replacen(" exec ", " ", 1));
    let configs_json = serde_json::json!([
        {"case": "mute", "script": mute_script()},
        {"case": "dies", "script": dies},
    ]);
    std::fs::write(&grid, configs_json.to_string()).unwrap();
    let t = Instant::now();
    let o = output_within(
        Command::new(BIN)
            .args(["sweep", "--serve-cmd", "sh -c {script} {port}", "--serve-ready-timeout", "10s"])
            .arg("--serve-grid")
            .arg(&grid)
            .args(["--serve-stop-grace", "2s", "--concurrency", "1", "--progress", "none", "-o"])
            .arg(&out),
        Duration::from_secs(90),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "no configuration ran: {err}");
    let took = t.elapsed();
    assert!(took >= Duration::from_secs(10), "the mute one waited its timeout: {took:?}");
    let doc = read_json(&out);
    let mute = &configs(&doc)[0];
    assert_eq!(mute["status"], "failed");
    let e = mute["error"].as_str().unwrap();
    assert!(e.contains("not ready within 10 s"), "{mute}");
    if !e.contains("connection refused") {
        // It listened in time: its last probe was cut at its bound.
        assert!(e.contains("/health gave no answer within"), "{mute}");
        assert!(mute["log_tail"].as_str().unwrap().contains("never answering"), "{mute}");
    }
    let dies = &configs(&doc)[1];
    assert_eq!((dies["status"].as_str(), dies["exit_status"].as_i64()), (Some("failed"), Some(5)), "{dies}");
    assert!(dies["error"].as_str().unwrap().contains("exited before it was ready"), "{dies}");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// A configuration's GPUs are `gpus` where the grid gives it, else
/// tp × pp × dp, as the prediction counts them (tp=2 had counted 1, doubling
/// tokens/s per GPU); a `gpus` that disagrees is warned of, in the terminal
/// and the document.
#[test]
fn a_configuration_s_gpus_follow_its_parallelism() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let grid = dir.path().join("grid.json");
    let script = serve_script("--speed 20");
    let configs_json = serde_json::json!([
        {"tensor_parallel_size": 2, "pp": 2, "script": script},
        {"tp": 2, "gpus": 3, "script": script},
        {"seqs": 4, "script": script},
    ]);
    std::fs::write(&grid, configs_json.to_string()).unwrap();
    let o = goodput()
        .args(["sweep", "--serve-cmd", "sh -c {script} {port}", "--serve-grid"])
        .arg(&grid)
        .args(["--concurrency", "1", "-n", "2", "--output-tokens", "4", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let doc = read_json(&out);
    let gpus: Vec<i64> = configs(&doc).iter().map(|c| c["gpus"].as_i64().unwrap()).collect();
    assert_eq!(gpus, [4, 3, 1], "{doc}");
    let warned = "the grid gives gpus=3, yet tp × pp × dp = 2";
    assert!(err.contains(warned), "{err}");
    let notes = doc["notes"].as_array().unwrap();
    assert!(notes.iter().any(|n| n.as_str().unwrap().contains(warned)), "{doc}");
    let o = goodput()
        .args(["sweep", "--serve-cmd", "srv --port {port}", "--serve-grid", "tp=two", "--concurrency", "1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("tp=two") && err.contains("not a positive whole number"), "{err}");
}

/// --fail-on-unsteady fails a sweep of servers whose points were none of
/// them steady, as it fails a plain sweep (exit 4; it had been ignored).
#[test]
fn fail_on_unsteady_applies_to_a_sweep_of_servers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 20")).unwrap());
    let o = goodput()
        .args(["sweep", "--serve-cmd", &template, "--fail-on-unsteady"])
        .args(["--concurrency", "2", "-n", "2", "--output-tokens", "4", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let doc = read_json(&out);
    let c = &configs(&doc)[0];
    assert_eq!(c["points"][0]["steady"], false, "two requests are no steady state: {doc}");
    assert_eq!(o.status.code(), Some(4), "{err}");
    // Its points not steady; or, where the machine held the client up while
    // a request was due (seen in a full run: a stall of 195 ms), that first.
    assert!(
        err.contains("not steady) (--fail-on-unsteady)")
            || err.contains("measured by a client that stalled") && err.contains("(--fail-on-unsteady)"),
        "{err}"
    );
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// A chatty server's log is capped at --serve-log-max: its first half, a
/// line saying what was left out, and the last of the rest; the warning and
/// the document say so. (A log had grown to 2 GB in seconds.)
#[test]
fn a_chatty_server_s_log_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let script = format!("yes chatter | head -c 3000000; {}", serve_script("--speed 20"));
    let o = goodput()
        .args(["sweep", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&script).unwrap()))
        .args(["--serve-log-max", "1", "--concurrency", "1", "-n", "2", "--output-tokens", "4", "--progress", "none"])
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let logs = dir.path().join("f.logs");
    let log = std::fs::read_to_string(logs.join("01-default.log")).unwrap();
    assert!(log.len() < (1 << 20) + 1000, "{} bytes", log.len());
    assert!(log.contains("the log's first 512 KiB end here"), "{}", &log[..200]);
    assert!(log.contains("of the server's output left out here"));
    // Its end joined to it, the files that held it meanwhile are gone.
    let left: Vec<_> = std::fs::read_dir(&logs).unwrap().filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
    assert!(!left.iter().any(|n| n.to_string_lossy().contains(".tail-")), "{left:?}");
    // The end: the server's own lines, after the chatter.
    assert!(log.contains("listening on"), "the last of the output is kept");
    assert!(err.contains("more than its log keeps (--serve-log-max 1 MiB)"), "{err}");
    let doc = read_json(&out);
    assert!(doc["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("more than its log keeps")));
    assert_all_gone(&logged_pids(&logs));
}

/// The words of a sweep whose servers all fail at once: counts in the
/// singular where one, no empty model field, control characters in a
/// parameter shown escaped (they had reached the terminal raw in the
/// configuration's header and its failure), and an unused parameter said
/// to make configurations alike only where two are (one configuration, or
/// each its own command, gets no such warning).
#[test]
fn a_sweep_s_words_fit_what_happened() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let grid = dir.path().join("grid.json");
    let run = |configs_json: Value| {
        std::fs::write(&grid, configs_json.to_string()).unwrap();
        let o = goodput()
            .args(["sweep", "--serve-cmd", "sh -c {script} {port} {seqs}", "--serve-grid"])
            .arg(&grid)
            .args(["--concurrency", "1", "--progress", "none", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1));
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (stdout, err) =
        run(serde_json::json!([{"case": "x\u{1b}[2Jy", "seqs": 1, "script": "echo 'bad \u{1b}]0;t\u{7}'; exit 3"}]));
    assert!(!err.contains('\u{1b}') && !stdout.contains('\u{1b}'), "{err:?} {stdout:?}");
    assert!(err.contains("── configuration 1/1: case=x"), "{err}");
    assert!(err.contains("failed: the server exited before it was ready"), "{err}");
    // One configuration has nothing to be alike.
    assert!(!err.contains("same server"), "{err}");
    assert!(stdout.contains("measured frontier · 1 configuration (0 ran, 0 points)"), "{stdout}");
    // Each its own command: {case} is a label.
    let (_, err) = run(serde_json::json!([
        {"case": "a", "seqs": 1, "script": "exit 3"},
        {"case": "b", "seqs": 2, "script": "exit 3"},
    ]));
    assert!(!err.contains("same server"), "{err}");
    let (_, err) = run(serde_json::json!([
        {"case": "a", "seqs": 1, "script": "exit 3"},
        {"case": "b", "seqs": 1, "script": "exit 3"},
        {"case": "c", "seqs": 1, "script": "exit 3"},
    ]));
    assert!(err.contains("{case} for the grid's parameter of that name: every configuration starts the same"), "{err}");
    let (_, err) = run(serde_json::json!([
        {"case": "a", "seqs": 1, "script": "exit 3"},
        {"case": "b", "seqs": 2, "script": "exit 3"},
        {"case": "c", "seqs": 1, "script": "exit 3"},
    ]));
    assert!(
        err.contains(
            "{case} for the grid's parameter of that name: configurations that differ in it alone start the same \
             server (case=a script=exit 3 seqs=1 and case=c script=exit 3 seqs=1)"
        ),
        "{err}"
    );
}

/// Ctrl-C during the second configuration's sweep stops the sweep: the
/// document holds the first configuration alone (the second is not
/// recorded, failed or otherwise), marked interrupted, and no server is
/// left; --resume runs the other two and keeps the first as it was.
#[test]
fn an_interrupted_sweep_keeps_what_it_finished_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template =
        format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 20 --max-num-seqs {seqs}")).unwrap());
    let args = |resume: bool| {
        let mut a: Vec<String> =
            ["sweep", "--serve-cmd", &template, "--serve-grid", "seqs=1,2,4", "--concurrency", "2"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        a.extend(["--duration", "2s", "--output-tokens", "256", "--progress", "none", "-o"].map(String::from));
        a.push(out.to_string_lossy().into_owned());
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let child = Command::new(BIN)
        .args(args(false))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    // Once the first configuration is written and the second's server
    // listens: Ctrl-C then comes in the midst of the second's sweep.
    let second = dir.path().join("f.logs").join("02-seqs=2.log");
    let t = Instant::now();
    loop {
        let written = std::fs::read_to_string(&out).ok().and_then(|s| serde_json::from_str::<Value>(&s).ok());
        let listens = std::fs::read_to_string(&second).is_ok_and(|l| l.contains("listening on"));
        if written.is_some_and(|d| configs(&d).len() == 1) && listens {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "the first configuration was never written");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(130), "{err}");
    assert!(err.contains("--resume runs the rest"), "{err}");
    let first = read_json(&out);
    assert_eq!(first["interrupted"], true);
    assert_eq!(configs(&first).len(), 1);
    let logs = dir.path().join("f.logs");
    assert_all_gone(&logged_pids(&logs));

    let o = goodput().args(args(true)).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 of the 3 configurations are in"), "{err}");
    let done = read_json(&out);
    assert_eq!(done["interrupted"], false);
    let ids: Vec<&str> = configs(&done).iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["seqs=1", "seqs=2", "seqs=4"]);
    // The first configuration as the stopped sweep wrote it.
    let mut kept = configs(&done)[0].clone();
    let mut before = configs(&first)[0].clone();
    // Whether it is on the frontier depends on the others.
    kept["dominated"] = Value::Null;
    before["dominated"] = Value::Null;
    assert_eq!(kept, before);
    assert_eq!(done["started_unix_s"], first["started_unix_s"]);
    assert_all_gone(&logged_pids(&logs));
}

/// SIGHUP (the terminal closed) mid-sweep stops the sweep as SIGTERM does:
/// the server's whole process group is stopped (a child of its own
/// included, which the parent-death signal does not reach), the document
/// is written, marked interrupted, and goodput exits 130. (SIGHUP had
/// killed goodput outright: exit 129, no document, the child orphaned.)
#[test]
fn sighup_stops_the_sweep_and_its_servers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let script = format!("sleep 300 & echo pid $!; {}", serve_script("--speed 2"));
    let child = Command::new(BIN)
        .args(["sweep", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&script).unwrap()))
        .args(["--concurrency", "2", "--duration", "30s", "--progress", "none", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    let logs = dir.path().join("f.logs");
    let log = logs.join("01-default.log");
    let t = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening on")) {
        assert!(t.elapsed() < Duration::from_secs(60), "the server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let pids = logged_pids(&logs);
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_all_gone(&pids);
    assert_eq!(o.status.code(), Some(130), "{:?}: {err}", o.status);
    assert!(err.contains("(SIGHUP)"), "{err}");
    let doc = read_json(&out);
    assert_eq!(doc["interrupted"], true);
}

/// --resume refuses a document measured with another SLO, load, workload
/// or template (exit 2, naming the setting and both values, before any
/// server starts): it had mixed the two runs' points in one frontier. The
/// grid may grow.
#[test]
fn resume_refuses_other_settings_and_lets_the_grid_grow() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template =
        format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 20 --max-num-seqs {seqs}")).unwrap());
    // The first sweep's flags, each value replaced by `changed`'s where it names the flag.
    let run = |grid: &str, changed: &[(&str, &str)], resume: bool| {
        let base = [
            ("--serve-cmd", template.as_str()),
            ("--serve-grid", grid),
            ("--concurrency", "2"),
            ("-n", "4"),
            ("--output-tokens", "4"),
            ("--progress", "none"),
            ("--slo", "ttft:p50<=60s"),
        ];
        let mut c = goodput();
        c.arg("sweep");
        for (flag, v) in base {
            c.args([flag, changed.iter().find(|(f, _)| *f == flag).map_or(v, |(_, v)| *v)]);
        }
        for (flag, v) in changed.iter().filter(|(f, _)| !base.iter().any(|(b, _)| b == f)) {
            c.args([*flag, *v]);
        }
        c.arg("-o").arg(&out).args(resume.then_some("--resume")).output().unwrap()
    };
    let o = run("seqs=1", &[], false);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let first = std::fs::read_to_string(&out).unwrap();
    let other_template = format!("{template} x");
    for (changed, named) in [
        (("--slo", "ttft:p50<=30s"), "--slo ttft:p50<=60s, and this sweep gives --slo ttft:p50<=30s"),
        (("--output-tokens", "8"), "--output-tokens"),
        (("--concurrency", "4"), "--concurrency 2, and this sweep gives --concurrency 4"),
        (("-n", "6"), "-n/--requests"),
        (("--serve-cmd", other_template.as_str()), "--serve-cmd"),
        (("--runs", "2"), "--runs 1, and this sweep gives --runs 2"),
    ] {
        let o = run("seqs=1,2", &[changed], true);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{changed:?}: {err}");
        assert!(err.contains(named), "{changed:?}: {err}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), first, "{changed:?}: the document is left as it was");
    }
    assert!(!dir.path().join("f.logs").join("02-seqs=2.log").exists(), "no server started");
    // The same template spaced otherwise is the same command.
    let spaced = template.replacen(" ", "   ", 1);
    let o = run("seqs=1,2", &[("--serve-cmd", spaced.as_str())], true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("1 of the 2 configurations are in"), "{err}");
    assert_eq!(configs(&read_json(&out)).len(), 2);
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// A server slow to stop: the notice says one Ctrl-C kills it now, and one
/// does (the first had left the wait to run its grace out), and the sweep's
/// own notice speaks of no in-flight requests when none are.
#[test]
fn one_ctrl_c_ends_a_slow_server_s_stop_grace() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    // The group's leader ignores SIGTERM and outlives the server it started.
    let script = format!(
        "echo pid $$; trap '' TERM; {} serve --port \"$0\" -q --progress none --speed 20 & echo pid $!; wait; exec \
         sleep 120",
        shlex::try_quote(BIN).unwrap()
    );
    let mut child = Command::new(BIN)
        .args(["sweep", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&script).unwrap()))
        .args(["--serve-stop-grace", "100s", "--concurrency", "1", "-n", "2", "--output-tokens", "4"])
        .args(["--progress", "none", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for l in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let mut said = Vec::new();
    let t = Instant::now();
    loop {
        let l = rx.recv_timeout(Duration::from_secs(60)).expect("no word of waiting for the server");
        said.push(l.clone());
        if l.contains("waiting for the server") {
            assert!(l.contains("(Ctrl-C or SIGTERM to kill it now)"), "{l}");
            break;
        }
    }
    let t_signal = Instant::now();
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t_signal.elapsed() < Duration::from_secs(30), "one Ctrl-C left the 100 s grace running: {said:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    said.extend(rx.try_iter());
    let said = said.join("\n");
    assert_eq!(status.code(), Some(130), "{said}");
    assert!(said.contains("stopping the sweep (Ctrl-C)") && !said.contains("in-flight ones get"), "{said}");
    assert!(t.elapsed() < Duration::from_secs(90));
    // The configuration had finished its points: it is kept.
    assert_eq!(configs(&read_json(&out))[0]["status"], "ok");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// goodput killed with SIGKILL, which it cannot catch, mid-sweep: the
/// server it started goes too (its parent-death signal).
#[test]
fn no_server_outlives_a_killed_goodput() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    // The server is started directly (no shell), as PDEATHSIG reaches the
    // process goodput starts.
    let template = format!("{} serve --port {{port}} -q --progress none --speed 2", shlex::try_quote(BIN).unwrap());
    let mut child = Command::new(BIN)
        .args([
            "sweep",
            "--serve-cmd",
            &template,
            "--concurrency",
            "2",
            "--duration",
            "30s",
            "--progress",
            "none",
            "-o",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    let log: PathBuf = dir.path().join("f.logs").join("01-default.log");
    let t = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening on")) {
        assert!(t.elapsed() < Duration::from_secs(60), "the server never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    let server = server_pid(child.id() as i32);
    assert!(alive(server));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_all_gone(&[server]);
}

/// The one child of `parent` (from /proc).
fn server_pid(parent: i32) -> i32 {
    let t = Instant::now();
    loop {
        let kids: Vec<i32> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|pid: &i32| {
                std::fs::read_to_string(format!("/proc/{pid}/stat")).ok().and_then(|s| {
                    let rest = s.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse::<i32>().ok()?;
                    Some(rest == parent)
                }) == Some(true)
            })
            .collect();
        if let [one] = kids[..] {
            return one;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "goodput has {} children", kids.len());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// --restart-per-point starts a server for each point; --serve-reset
/// POSTs its path before each point (goodput serve answers vLLM's
/// /reset_prefix_cache), and a server without that route fails its
/// configuration, saying which flag asked for it.
#[test]
fn servers_restart_per_point_and_a_reset_the_server_lacks_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 20")).unwrap());
    let sweep = |extra: &[&str]| {
        goodput()
            .args(["sweep", "--serve-cmd", &template, "--concurrency", "1,2", "-n", "4", "--output-tokens", "8"])
            .args(["--progress", "none", "-o"])
            .arg(&out)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = sweep(&["--restart-per-point"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    let loads: Vec<&Value> = configs(&doc)[0]["points"].as_array().unwrap().iter().map(|p| &p["load"]).collect();
    assert_eq!(loads.len(), 2, "{doc}");
    let logs = dir.path().join("f.logs");
    let pids = logged_pids(&logs);
    assert_eq!(pids.len(), 2, "a server per point");
    assert!(logs.join("01-default.point00.log").exists() && logs.join("01-default.point01.log").exists());
    assert_all_gone(&pids);

    // goodput serve answers vLLM's reset, as vLLM does with VLLM_SERVER_DEV_MODE=1.
    let o = sweep(&["--serve-reset", "/reset_prefix_cache"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(configs(&read_json(&out))[0]["status"], "ok");

    let o = sweep(&["--serve-reset", "/reset_all_caches"]);
    assert_eq!(o.status.code(), Some(1));
    let doc = read_json(&out);
    let c = &configs(&doc)[0];
    assert_eq!(c["status"], "failed");
    let e = c["error"].as_str().unwrap();
    assert!(e.contains("POST /reset_all_caches (--serve-reset) with HTTP 404"), "{e}");
    assert_all_gone(&logged_pids(&logs));
}

/// --restart-per-point with --trace: a server for each speed, each
/// replaying the trace once at its speed.
#[test]
fn servers_restart_for_each_speed_of_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (out, trace) = (dir.path().join("f.json"), dir.path().join("t.jsonl"));
    even_trace(&trace, 6, 0.1);
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 20")).unwrap());
    let o = goodput()
        .args(["sweep", "--serve-cmd", &template, "--restart-per-point", "--trace"])
        .arg(&trace)
        .args(["--trace-speed", "1,4", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    let rates: Vec<f64> =
        configs(&doc)[0]["points"].as_array().unwrap().iter().map(|p| p["load"]["value"].as_f64().unwrap()).collect();
    assert_eq!(rates.len(), 2, "{doc}");
    // 6 requests over 0.5 s: 12 req/s at speed 1, 48 at 4.
    assert!((rates[0] - 12.0).abs() < 1e-9 && (rates[1] - 48.0).abs() < 1e-9, "{rates:?}");
    let logs = dir.path().join("f.logs");
    let pids = logged_pids(&logs);
    assert_eq!(pids.len(), 2, "a server per speed");
    assert!(logs.join("01-default.point00.log").exists() && logs.join("01-default.point01.log").exists());
    assert_all_gone(&pids);
}

/// A stand-in for a DCGM exporter on 127.0.0.1:0: the GPUs' energy counter
/// (mJ) rising at `watts` from its start, and a power limit of 700 W. Serves until the returned flag is
/// set and one more connection comes.
fn dcgm_exporter(watts: f64) -> (String, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", l.local_addr().unwrap());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let done = stop.clone();
    let start = Instant::now();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            if done.load(std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let Ok(mut c) = conn else { continue };
            let mut buf = [0u8; 4096];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let mj = watts * 1000.0 * start.elapsed().as_secs_f64();
            let body = format!(
                "# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\"}} {mj:.0}\n\
                 # TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge\nDCGM_FI_DEV_POWER_MGMT_LIMIT{{gpu=\"0\"}} 700\n"
            );
            let _ = write!(
                c,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, stop)
}

/// With a DCGM exporter scraped beside each server (`{port}` in
/// --metrics-url is the server's own), every point carries the energy per
/// output token (the exporter's 300 W over the server's token rate) and
/// its tokens/s per megawatt of the 700 W power limit (it had been left
/// out, though the point's own sweep document had it). The servers are
/// the fixed profile's, which count no energy of their own, as vLLM's do
/// not (the engine profile exports its power model's counters).
#[test]
fn energy_per_token_comes_from_a_scraped_energy_counter() {
    let (dcgm, stop) = dcgm_exporter(300.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--profile fixed")).unwrap());
    let o = goodput()
        .args(["sweep", "--serve-cmd", &template, "--concurrency", "8", "--duration", "3s", "--output-tokens", "32"])
        .args(["--metrics-url", "http://127.0.0.1:{port}/metrics", "--metrics-url", &dcgm])
        .args(["--metrics-interval", "200ms", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = std::net::TcpStream::connect(dcgm.trim_start_matches("http://").trim_end_matches("/metrics"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&out);
    let p = &configs(&doc)[0]["points"][0];
    let joules = p["joules_per_output_token"].as_f64().unwrap_or_else(|| panic!("no energy: {p}"));
    let expected = 300.0 / p["output_tokens_per_s"].as_f64().unwrap();
    assert!(joules > expected / 2.0 && joules < expected * 2.0, "{joules} J/token, about {expected} expected");
    let per_mw = p["output_tokens_per_s_per_mw"].as_f64().unwrap_or_else(|| panic!("no tok/s per MW: {p}"));
    let expected = p["output_tokens_per_s"].as_f64().unwrap() / 700e-6;
    assert!((per_mw / expected - 1.0).abs() < 1e-6, "{per_mw} tok/s per MW, {expected} expected");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// What is refused before any server starts.
#[test]
fn bad_templates_and_grids_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let refused = |extra: &[&str]| {
        let o = goodput().arg("sweep").arg("-o").arg(&out).args(extra).output().unwrap();
        assert!(!o.status.success());
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let c1 = ["--concurrency", "1"];
    assert!(refused(&[&c1[..], &["--serve-cmd", "srv --port 80"]].concat()).contains("no {port}"));
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port} --n {seqs}", "--serve-grid", "tp=1,2"]].concat());
    assert!(e.contains("{seqs}") && e.contains("tp=1"), "{e}");
    assert!(
        refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--serve-grid", "a=1,1"]].concat()).contains("twice")
    );
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--serve-grid", "gpus=0"]].concat());
    assert!(e.contains("not a count of GPUs"), "{e}");
    // A bad tp beside gpus= (it had ended the sweep after the configurations
    // before it), and counts whose product no u32 holds (it had wrapped to 0).
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--serve-grid", "gpus=2;tp=x"]].concat());
    assert!(e.contains("tp=x"), "{e}");
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--serve-grid", "tp=65536;pp=65536"]].concat());
    assert!(e.contains("past any count of GPUs"), "{e}");
    // Before any server starts, not after every one has run.
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--markdown", "f.md"]].concat());
    assert!(e.contains("--markdown") && e.contains("--html"), "{e}");
    let e = refused(&["--auto", "--serve-cmd", "srv --port {port}", "--restart-per-point"]);
    assert!(e.contains("--restart-per-point runs a server per point"), "{e}");
    assert!(!out.exists() && !dir.path().join("f.logs").exists());
    // A quality term no answer could be scored by (no --dataset).
    let e = refused(&[&c1[..], &["--serve-cmd", "srv --port {port}", "--slo", "rouge_l>=0.5"]].concat());
    assert!(e.contains("--slo rouge_l>=0.5") && e.contains("--dataset"), "{e}");
    let o = goodput().args(["sweep", "--concurrency", "1", "--serve-cmd", "srv --port {port}"]).output().unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("--output"), "-o is required");
    // Standard output cannot take a frontier rewritten after each
    // configuration, nor logs beside it (it had written one document a
    // configuration there, and logs into a folder named -.logs).
    let o = goodput()
        .current_dir(dir.path())
        .args(["sweep", "--concurrency", "1", "--serve-cmd", "srv --port {port}", "-o", "-"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("-o - cannot hold it"), "{e}");
    assert!(o.stdout.is_empty() && !dir.path().join("-.logs").exists());
}

/// The finite errors of every compared point of a frontier comparison, and
/// the pairs' (measured, predicted) ids.
fn compared(c: &Value) -> (Vec<f64>, Vec<(String, String)>) {
    let mut errors = Vec::new();
    let mut pairs = Vec::new();
    for p in c["pairs"].as_array().unwrap() {
        pairs.push((p["measured"].as_str().unwrap().to_string(), p["predicted"].as_str().unwrap().to_string()));
        for pt in p["points"].as_array().unwrap() {
            for f in pt["figures"].as_array().unwrap() {
                if let Some(e) = f["error"].as_f64() {
                    assert!(e.is_finite(), "{f}");
                    errors.push(e);
                }
            }
        }
    }
    (errors, pairs)
}

/// The predicted frontier beside the measured one, both ways: `sweep
/// --serve-grid … --estimate` runs the grid in virtual time too and
/// compares; `goodput compare plan.json frontier.json` pairs plan's
/// configurations with the measured ones by their knobs (a batch limit plan
/// did not simulate again taking the widest's curve), reads the predicted
/// curve between its loads, and lists what is on one side only.
#[test]
fn a_predicted_frontier_is_set_beside_the_measured_one() {
    let dir = tempfile::tempdir().unwrap();
    let (out, html) = (dir.path().join("frontier.json"), dir.path().join("frontier.html"));
    let workload = ["--input-tokens", "512", "--output-tokens", "24"];
    let t = Instant::now();
    let o = goodput()
        .args(["sweep", "--estimate", "--serve-cmd"])
        .arg(format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 5 --max-num-seqs {seqs}")).unwrap()))
        .args(["--serve-grid", "seqs=4,16", "--concurrency", "3,12", "-n", "36", "--progress", "none"])
        // The grid's two loads only: no bisection towards the SLO's
        // boundary, which a busy machine's unsteady queue at 12 users on 4
        // sequences had started (three more measured loads).
        .args(["--slo", "ttft:p50<=60s", "--search-steps", "0"])
        .args(workload)
        .arg("-o")
        .arg(&out)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    eprintln!("two configurations predicted and measured in {:.1} s", t.elapsed().as_secs_f64());
    let predicted = read_json(&dir.path().join("frontier.predicted.json"));
    assert_eq!((predicted["kind"].as_str(), predicted["source"].as_str()), (Some("frontier"), Some("predicted")));
    for c in configs(&predicted) {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["points"].as_array().unwrap().len(), 2, "the grid's loads in virtual time: {c}");
        // The engine's power model's figures, as plan gives them (they had
        // been null).
        for p in c["points"].as_array().unwrap() {
            let j = p["joules_per_output_token"].as_f64().unwrap_or_else(|| panic!("no J/token: {p}"));
            let mw = p["output_tokens_per_s_per_mw"].as_f64().unwrap_or_else(|| panic!("no tok/s per MW: {p}"));
            assert!(j > 0.0 && mw > 0.0, "{p}");
        }
    }
    crate::schema::assert_valid(&predicted, "FrontierResult", "a predicted frontier from --estimate");
    // And how to fit the engine to what was measured.
    let fit = format!("goodput estimate --model llama-3.1-8b --gpu h100-sxm --validate {}", out.display());
    assert!(err.contains(&fit) && err.contains("frontier.calibration.json"), "{err}");
    let c = read_json(&dir.path().join("frontier.compare.json"));
    assert_eq!(c["kind"], "frontier_compare");
    let (errors, pairs) = compared(&c);
    assert_eq!(pairs, [("seqs=4".into(), "seqs=4".into()), ("seqs=16".into(), "seqs=16".into())]);
    // Two loads, four figures each, in each pair.
    assert_eq!(errors.len(), 2 * 2 * 4, "{c}");
    assert!(c["unmatched"].as_array().unwrap().is_empty(), "{c}");
    // goodput serve runs the prediction's engine five times faster than
    // real time (--speed 5): the prediction is a fifth of what is measured
    // (an error of -80%), less so where a loaded machine slowed the server.
    for (i, figure) in [(0, "output_tokens_per_s_per_gpu"), (1, "tokens_per_s_per_user")] {
        let s = &c["overall"][i];
        assert_eq!(s["figure"], figure);
        let e = s["median_error"].as_f64().unwrap();
        assert!((-0.9..-0.6).contains(&e), "{s}");
    }
    crate::schema::assert_valid(&c, "FrontierComparison", "a frontier comparison");
    let page = std::fs::read_to_string(dir.path().join("frontier.compare.html")).unwrap();
    assert!(page.contains(r#"data-chart="frontier-compare""#) && page.contains("seqs=16 predicted"));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("seqs=16 ← predicted by seqs=16") && stdout.contains("median |error|"), "{stdout}");

    // plan's frontier against the measured one: batch limits 16 and 32 (16
    // is a prefix of 32's curve, not simulated again), loads 1, 2, 4, ….
    let plan = dir.path().join("plan.json");
    plan_on_one_h100(&["--max-num-seqs", "16,32", "--requests-per-user", "3"], &workload, &plan);
    let (both, csv, md, doc) = (
        dir.path().join("both.html"),
        dir.path().join("both.csv"),
        dir.path().join("both.md"),
        dir.path().join("both.json"),
    );
    // The measured document first: the predicted one is found by its source.
    let o = goodput()
        .arg("compare")
        .arg(&out)
        .arg(&plan)
        .arg("--html")
        .arg(&both)
        .arg("--csv")
        .arg(&csv)
        .arg("--markdown")
        .arg(&md)
        .arg("-o")
        .arg(&doc)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let c = read_json(&doc);
    assert_eq!(c["predicted_label"], "plan.json");
    let (errors, pairs) = compared(&c);
    assert_eq!(pairs.len(), 1, "{c}");
    assert_eq!(pairs[0].0, "seqs=16");
    assert!(pairs[0].1.contains("seqs16"), "{pairs:?}");
    let pair = &c["pairs"][0];
    let pts = pair["points"].as_array().unwrap();
    assert!(!pts.is_empty() && !errors.is_empty(), "{c}");
    // 3 and 12 users fall between plan's doubling loads.
    assert!(pts.iter().all(|p| p["interpolated"] == true), "{pair}");
    let unmatched: Vec<(&str, &str)> = c["unmatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["source"].as_str().unwrap(), u["config"].as_str().unwrap()))
        .collect();
    assert!(unmatched.contains(&("measured", "seqs=4")), "{unmatched:?}");
    assert!(unmatched.iter().any(|(s, id)| *s == "predicted" && id.contains("seqs32")), "{unmatched:?}");
    let why = &c["unmatched"].as_array().unwrap().iter().find(|u| u["config"] == "seqs=4").unwrap()["reason"];
    assert!(why.as_str().unwrap().contains("max_num_seqs=4"), "{why}");
    crate::schema::assert_valid(&c, "FrontierComparison", "plan against a measured frontier");
    assert!(stdout.contains("on one side only") && stdout.contains("seqs=4"), "{stdout}");
    assert!(std::fs::read_to_string(&both).unwrap().contains("measured Pareto frontier"));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.starts_with("measured_config,predicted_config,") && rows.contains("measured only"), "{rows}");
    assert!(std::fs::read_to_string(&md).unwrap().contains("| **overall** |"));

    // A frontier beside a run is refused, naming what compare takes.
    let run = dir.path().join("frontier.logs").join("01-seqs=4.sweep.json");
    let o = goodput().arg("compare").arg(&plan).arg(&run).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("two frontier documents"));
}

/// --estimate with a grid parameter the simulator has no knob for is
/// refused before any server starts, naming it and the knobs.
#[test]
fn an_estimate_of_a_parameter_without_a_knob_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = refused_before_any_server(dir.path(), "temperature", &["--serve-grid", "temperature=0,1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("temperature maps onto no knob") && err.contains("max_num_seqs"), "{err}");
    // SGLang's mixed chunks are a knob, of two values.
    let (code, err) =
        refused_before_any_server(dir.path(), "enable_mixed_chunk", &["--serve-grid", "enable_mixed_chunk=maybe"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("enable_mixed_chunk=maybe") && err.contains("is not true or false"), "{err}");
    // A draft acceptance outside [0, 1] where the grid drafts: refused
    // before the servers run (it had failed only the drafting
    // configuration's prediction, after every server was measured).
    let (_, err) = refused_before_any_server(
        dir.path(),
        "spec_tokens",
        &["--serve-grid", "spec_tokens=0,3", "--spec-acceptance", "1.5"],
    );
    assert!(err.contains("--spec-acceptance 1.5 must lie in [0, 1]"), "{err}");
}

/// `plan` on one H100 at TP1 in BF16 with an 8,192-token budget and `more`
/// flags, for `workload`, its frontier written to `out`.
fn plan_on_one_h100(more: &[&str], workload: &[&str], out: &Path) {
    let o = goodput()
        .args(["plan", "-q", "--gpu", "h100", "--gpus", "1", "--tp", "1", "--precision", "bf16"])
        .args(["--max-num-batched-tokens", "8192"])
        .args(more)
        .args(workload)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `sweep --estimate` of a template that would leave a file `started` in
/// `dir`, its one parameter `param`, with `args`: its exit code and its
/// words, once it is known to have failed with no server started.
fn refused_before_any_server(dir: &Path, param: &str, args: &[&str]) -> (Option<i32>, String) {
    let o = goodput()
        .args(["sweep", "--estimate", "--serve-cmd"])
        .arg(format!("sh -c 'echo started > started' {{port}} {{{param}}}"))
        .args(args)
        .args(["--concurrency", "1", "-n", "2", "-o"])
        .arg(dir.join("f.json"))
        .current_dir(dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "{err}");
    assert!(!dir.join("started").exists(), "no server started: {err}");
    (o.status.code(), err)
}

/// A grid none of whose configurations can be predicted (an engine flag out
/// of range fails each) has nothing to compare the servers with: refused
/// after the predictions, before any server starts, the predicted document
/// keeping each configuration's error (every server had run, for minutes,
/// and the comparison paired nothing).
#[test]
fn an_estimate_that_predicts_nothing_starts_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err) =
        refused_before_any_server(dir.path(), "tp", &["--serve-grid", "tp=1,2", "--gpu-memory-utilization", "1.5"]);
    assert!(
        err.contains("no configuration of the grid could be predicted (tp=1: ")
            && err.contains("--gpu-memory-utilization 1.5 must lie in (0, 1]")
            && err.contains("so no server was started"),
        "{err}"
    );
    let predicted = read_json(&dir.path().join("f.predicted.json"));
    let errors: Vec<&str> = configs(&predicted).iter().map(|c| c["error"].as_str().unwrap()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors.iter().all(|e| e.contains("--gpu-memory-utilization")), "{errors:?}");
    assert!(!dir.path().join("f.json").exists(), "no measured frontier");
}

/// `pd` and `scheduler` are knobs of the simulator too: a grid of
/// disaggregation ratios (and schedulers) is predicted in virtual time,
/// each configuration counting both pools' GPUs, and set beside the
/// measured servers, which run the same ratios.
#[test]
fn a_grid_of_disaggregation_ratios_and_schedulers_is_predicted_and_paired() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("frontier.json");
    let o = goodput()
        .args(["sweep", "--estimate", "--serve-cmd"])
        .arg(format!(
            "sh -c {} {{port}}",
            shlex::try_quote(&serve_script("--speed 5 --pd {pd} --scheduler {scheduler}")).unwrap()
        ))
        .args(["--serve-grid", "pd=1:1,1:2;scheduler=trtllm,sglang"])
        .args(["--concurrency", "2", "-n", "8", "--progress", "none"])
        .args(["--input-tokens", "256", "--output-tokens", "8", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let predicted = read_json(&dir.path().join("frontier.predicted.json"));
    let gpus: Vec<u64> = configs(&predicted).iter().map(|c| c["gpus"].as_u64().unwrap()).collect();
    assert_eq!(gpus, [2, 2, 3, 3], "one prefill and one or two decode instances, one GPU each");
    for c in configs(&predicted) {
        assert_eq!(c["status"], "ok", "{c}");
    }
    let (_, pairs) = compared(&read_json(&dir.path().join("frontier.compare.json")));
    assert_eq!(pairs.len(), 4, "{pairs:?}");
    // A ratio that is not P:D is refused before any server starts.
    let (_, err) = refused_before_any_server(dir.path(), "pd", &["--serve-grid", "pd=1-1"]);
    assert!(err.contains("P:D"), "{err}");
}

/// `spec_tokens` (vLLM's `num_speculative_tokens`) is a knob too: a grid
/// of draft lengths is predicted in virtual time, the sweep's
/// `--spec-acceptance` describing the configurations that draft (not
/// refused for the one that does not), and paired with the measured
/// servers; `compare` pairs plan's `spec3` with the measured
/// `spec_tokens=3` and plan's configuration without drafts with
/// `spec_tokens=0`, which plan leaves out of its params.
#[test]
fn a_grid_of_draft_lengths_is_predicted_and_paired_with_plan_s() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("frontier.json");
    let workload = ["--input-tokens", "256", "--output-tokens", "16"];
    let o = goodput()
        .args(["sweep", "--estimate", "--serve-cmd"])
        .arg(format!(
            "sh -c {} {{port}}",
            shlex::try_quote(&serve_script("--speed 1 --max-num-batched-tokens 8192 --spec-tokens {spec_tokens}"))
                .unwrap()
        ))
        .args(["--serve-grid", "spec_tokens=0,3", "--spec-acceptance", "0.7", "--max-num-batched-tokens", "8192"])
        .args(["--concurrency", "1", "-n", "4", "--progress", "none"])
        .args(workload)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let predicted = read_json(&dir.path().join("frontier.predicted.json"));
    let tpot: Vec<f64> = configs(&predicted)
        .iter()
        .map(|c| {
            assert_eq!(c["status"], "ok", "{c}");
            c["points"][0]["tpot_ms"].as_f64().unwrap()
        })
        .collect();
    assert!(tpot[1] < 0.8 * tpot[0], "three drafts at 0.7 shorten one user's TPOT: {tpot:?}");
    // So do the measured servers', which draft as the template tells them.
    let measured: Vec<f64> =
        configs(&read_json(&out)).iter().map(|c| c["points"][0]["tpot_ms"].as_f64().unwrap()).collect();
    assert!(measured[1] < measured[0], "{measured:?}");
    let (_, pairs) = compared(&read_json(&dir.path().join("frontier.compare.json")));
    assert_eq!(
        pairs,
        [("spec_tokens=0".into(), "spec_tokens=0".into()), ("spec_tokens=3".into(), "spec_tokens=3".into())]
    );
    let plan = dir.path().join("plan.json");
    plan_on_one_h100(&["--spec-tokens", "0,3", "--concurrency", "1,2", "--requests-per-user", "2"], &workload, &plan);
    let both = dir.path().join("both.json");
    let o = goodput().arg("compare").arg(&out).arg(&plan).arg("-o").arg(&both).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (_, pairs) = compared(&read_json(&both));
    assert_eq!(
        pairs,
        [
            ("spec_tokens=0".into(), "h100-sxm tp1x1 bf16 mbt8192".into()),
            ("spec_tokens=3".into(), "h100-sxm tp1x1 bf16 mbt8192 spec3".into())
        ]
    );
}

/// The settings a measured frontier keeps for `--resume` hold its template
/// with its credentials masked, as the "starting:" line shows it: a value
/// named as one (`SERVER_KEY=…`, `HF_TOKEN=…`, a server's own secret) and
/// the client's key; a header value that is no credential masks nothing
/// (`X-Priority: 1` had hidden `--max-num-seqs 1`).
#[test]
fn the_kept_template_masks_credentials_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let (key, token) = ("sk-kept-secret-4711", "hf_server_only_0815");
    let script = serve_script("--speed 20 --max-num-seqs {seqs}");
    let template =
        format!("env SERVER_KEY={key} HF_TOKEN={token} sh -c {} {{port}}", shlex::try_quote(&script).unwrap());
    let o = goodput()
        .args(["sweep", "--serve-cmd", &template, "--serve-grid", "seqs=1", "--concurrency", "1", "-n", "2"])
        .args(["--output-tokens", "2", "--progress", "none", "--api-key", key, "--header", "X-Priority: 1", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = std::fs::read_to_string(&out).unwrap();
    assert!(doc.contains("SERVER_KEY=***") && doc.contains("HF_TOKEN=***"), "{doc}");
    assert!(!doc.contains(key) && !doc.contains(token), "a credential is written into the document");
    let said = String::from_utf8_lossy(&o.stderr);
    assert!(said.contains("starting: env 'SERVER_KEY=***' 'HF_TOKEN=***'"), "{said}");
    assert!(said.contains("--max-num-seqs 1") && !said.contains(key) && !said.contains(token), "{said}");
}

/// A grid value set among other text in a `sh -c` script is quoted for
/// that shell: a space or a `;` in it stays in the one argument (it had
/// split the word and run the rest as a command of its own).
#[test]
fn a_value_in_a_shell_script_is_quoted_for_that_shell() {
    let dir = tempfile::tempdir().unwrap();
    let pwned = dir.path().join("pwned");
    let grid = dir.path().join("grid.json");
    let tag = format!("a  b; touch {}", pwned.display());
    std::fs::write(&grid, serde_json::json!([{"tag": tag}]).to_string()).unwrap();
    let out = dir.path().join("f.json");
    let o = goodput()
        .args(["sweep", "--serve-cmd", "sh -c 'echo pid $$; echo tag={tag}; exit 3' {port}", "--serve-grid"])
        .arg(&grid)
        .args(["--concurrency", "1", "--progress", "none", "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!pwned.exists(), "the value ran as a command");
    let doc = read_json(&out);
    let tail = configs(&doc)[0]["log_tail"].as_str().unwrap();
    assert!(tail.contains(&format!("tag={tag}")), "{tail}");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// A grid file's parameters keep the order they were written in: in the
/// configurations' ids, the tables and the document's params (JSON's and
/// TOML's readers had sorted them by name).
#[test]
fn a_grid_file_s_parameters_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("grid.json", r#"[{"zeta": 1, "alpha": "x"}, {"zeta": 2, "alpha": "x"}]"#),
        ("grid.toml", "zeta = [1, 2]\nalpha = [\"x\"]\n"),
    ] {
        let grid = dir.path().join(name);
        std::fs::write(&grid, text).unwrap();
        let out = dir.path().join(format!("{name}.out.json"));
        let o = goodput()
            .args(["sweep", "--serve-cmd", "sh -c 'echo {zeta} {alpha}; exit 3' {port}", "--serve-grid"])
            .arg(&grid)
            .args(["--concurrency", "1", "--progress", "none", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains("── configuration 1/2: zeta=1 alpha=x"), "{name}: {err}");
        let doc = read_json(&out);
        let ids: Vec<&str> = configs(&doc).iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["zeta=1 alpha=x", "zeta=2 alpha=x"], "{name}");
        let text = std::fs::read_to_string(&out).unwrap();
        let params = &text[text.find("\"params\"").unwrap()..];
        assert!(params.find("\"zeta\"").unwrap() < params.find("\"alpha\"").unwrap(), "{name}: {params:.80}");
        assert!(String::from_utf8_lossy(&o.stdout).contains("zeta=1 alpha=x"), "{name}");
    }
}

/// --fail-on-unsteady fails a sweep of servers whose point was measured by a
/// client that stalled (stopped here with SIGSTOP) while its requests were
/// in flight, as it fails a plain sweep's point: exit 4, the point's stall
/// kept in the document. (A frontier point kept no client record, and the
/// stall had passed.)
#[test]
fn fail_on_unsteady_fails_a_point_whose_client_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("f.json");
    let template = format!("sh -c {} {{port}}", shlex::try_quote(&serve_script("--speed 5")).unwrap());
    let child = Command::new(BIN)
        .args(["sweep", "--serve-cmd", &template, "--fail-on-unsteady", "--concurrency", "4", "--duration", "5s"])
        .args(["--output-tokens", "64", "--progress", "none", "-o"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("OPENAI_API_KEY")
        .spawn()
        .unwrap();
    let log = dir.path().join("f.logs").join("01-default.log");
    let t = Instant::now();
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening on")) {
        assert!(t.elapsed() < Duration::from_secs(60), "the server never listened");
        std::thread::sleep(Duration::from_millis(10));
    }
    // A stall every second until goodput exits: the point's requests are in
    // flight over some of them however long the sweep took to begin it.
    let mut child = child;
    let t = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(120) {
            // SIGTERM stops the sweep and its server.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let _ = child.wait();
            panic!("the sweep did not end");
        }
        std::thread::sleep(Duration::from_millis(700));
        // SAFETY: signals our own child (stopped, then let go on).
        unsafe { libc::kill(child.id() as i32, libc::SIGSTOP) };
        std::thread::sleep(Duration::from_millis(300));
        unsafe { libc::kill(child.id() as i32, libc::SIGCONT) };
    }
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("measured by a client that stalled") && err.contains("(--fail-on-unsteady)"), "{err}");
    let doc = read_json(&out);
    let p = &configs(&doc)[0]["points"][0];
    assert!(p["client_stalled"].as_str().is_some_and(|s| s.contains("the client stalled")), "{p}");
    crate::schema::assert_valid(&doc, "FrontierResult", "a frontier with a stalled point");
    assert_all_gone(&logged_pids(&dir.path().join("f.logs")));
}

/// A server that exits in the midst of a point: the configuration is
/// failed, the point it exited during named and not counted as done (the
/// sweep's cut-short point had counted, "1 point in"), with the exit
/// status and the log's tail; and --resume runs it again (it had kept the
/// failed configuration as finished).
#[test]
fn a_server_that_exits_mid_point_fails_it_and_resume_runs_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let grid = dir.path().join("grid.json");
    let mark = dir.path().join("crashed-once");
    let srv_log = dir.path().join("crashing-server.log");
    let bin = shlex::try_quote(BIN).unwrap().into_owned();
    // Crashes a second into its first sweep; works the second time.
    let script = format!(
        "echo pid $$; if [ -e {mark} ]; then exec {bin} serve --port \"$0\" -q --progress none --speed 20; fi; \
         touch {mark}; {bin} serve --port \"$0\" -q --progress none --speed 2 > {log} 2>&1 & \
         until grep -q listening {log}; do sleep 0.05; done; sleep 1; \
         echo 'CUDA error: an illegal memory access'; kill -9 $!; exit 9",
        mark = shlex::try_quote(mark.to_str().unwrap()).unwrap(),
        log = shlex::try_quote(srv_log.to_str().unwrap()).unwrap()
    );
    std::fs::write(&grid, serde_json::json!([{"case": "flaky", "script": script}]).to_string()).unwrap();
    let out = dir.path().join("f.json");
    let logs = dir.path().join("logs");
    let run = |resume: bool| {
        goodput()
            .args(["sweep", "--serve-cmd", "sh -c {script} {port}", "--serve-grid"])
            .arg(&grid)
            .arg("--serve-logs")
            .arg(&logs)
            .args(["--concurrency", "4", "--duration", "3s", "--output-tokens", "16", "--progress", "none", "-o"])
            .arg(&out)
            .args(resume.then_some("--resume"))
            .output()
            .unwrap()
    };
    let o = run(false);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "no configuration ran: {err}");
    let doc = read_json(&out);
    let c = &configs(&doc)[0];
    assert_eq!((c["status"].as_str(), c["exit_status"].as_i64()), (Some("failed"), Some(9)), "{c}");
    let e = c["error"].as_str().unwrap();
    assert!(e.contains("exited during the point at concurrency 4 (exit status 9)"), "{e}");
    assert!(e.contains("0 points done before it"), "{e}");
    assert_eq!(c["exited_during"], serde_json::json!({"kind": "concurrency", "value": 4}), "{c}");
    assert!(c["points"].as_array().is_none_or(|p| p.is_empty()), "{c}");
    assert!(c["log_tail"].as_str().unwrap().contains("illegal memory access"), "{c}");
    crate::schema::assert_valid(&doc, "FrontierResult", "a frontier whose server exited mid-point");
    assert_all_gone(&logged_pids(&logs));

    let o = run(true);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("running again the configuration whose server exited during a point"), "{err}");
    let doc = read_json(&out);
    assert_eq!(configs(&doc).len(), 1, "{doc}");
    let c = &configs(&doc)[0];
    assert_eq!(c["status"], "ok", "{c}");
    assert!(c.get("exited_during").is_none() && c.get("error").is_none(), "{c}");
    assert!(c["points"][0]["completed"].as_u64().unwrap() > 0, "{c}");
    assert_all_gone(&logged_pids(&logs));
}

/// `vllm serve`'s and SGLang's `python3 -m sglang.launch_server`'s flags,
/// as `goodput serve`'s simulated engine takes them: a `vllm` and a
/// `python3` on PATH for the commands `plan --grid-out` writes, since
/// neither server runs here. Each logs the engine flags it was given, and
/// refuses a flag it does not know, so a command the plan writes wrongly
/// fails.
///
/// Prefill apart from decode: a server started as a pool's instance
/// (vLLM's `--kv-transfer-config`, SGLang's `--disaggregation-mode`) logs
/// its role and GPUs, keeps its knobs in `$SHIM_POOLS/PORT` and serves its
/// /health; the router (`vllm-router`, SGLang's `python3 -m
/// sglang_router.launch_router`) reads the knobs of the instances it is
/// given and serves their pools as one simulated engine (`--pd`, each
/// pool's instance picked by the simulator's router of the router's
/// `--policy`) on its port, as the servers and the router together would. `python3 -c`, the
/// script's wait for each /health, asks it over a real socket.
fn server_shims(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let goodput = shlex::try_quote(BIN).unwrap().into_owned();
    let run = format!(
        r#"echo "engine: $model$args"
[ -n "$role" ] && echo "instance: $role on GPUs $gpus at $port"
if [ -n "$SHIM_POOLS" ] && [ -n "$port" ]; then
  mkdir -p "$SHIM_POOLS" && printf '%s\n' "$args" > "$SHIM_POOLS/$port"
fi
echo "pid $$"
exec {goodput} serve --profile engine --model "$SHIM_MODEL" --gpu "$SHIM_GPU" --speed 20 -q --progress none $args $addr
"#
    );
    // The pools' knobs, from the first instance of each, as one engine.
    let route = format!(
        r#"case "$policy" in
  round_robin) router=round-robin;; cache_aware) router=prefix-aware;; power_of_two) router=power-of-two;;
  *) echo "router shim: policy $policy" >&2; exit 2;;
esac
if [ -n "$workers" ]; then
  # Replicas behind the router's policy: the engine's --dp behind its router,
  # which routes among its expert-parallel groups (SGLang's power_of_two on
  # the loads it polls every --worker-load-check-interval seconds).
  set -- $workers; n=$#
  knobs=$(cat "$SHIM_POOLS/$1") || exit 2
  tp=$(printf '%s' "$knobs" | sed -n 's/.* --tp \([0-9]*\).*/\1/p')
  # A replica of several ranks (an expert-parallel group): the engine's --dp counts them all.
  ranks=$(printf '%s' "$knobs" | sed -n 's/.* --dp \([0-9]*\).*/\1/p')
  knobs=$(printf '%s' "$knobs" | sed 's/ --tp [0-9]*//; s/ --dp [0-9]*//')
  echo "router: $n replicas ($workers) by $policy at $port"
  echo "pid $$"
  exec {goodput} serve --profile engine --model "$SHIM_MODEL" --gpu "$SHIM_GPU" --speed 20 -q --progress none $knobs \
    --dp "$(( n * ${{ranks:-1}} ))" --router "$router" ${{poll:+--router-poll ${{poll}}s}} --tp "${{tp:-1}}" \
    --host 127.0.0.1 --port "$port"
fi
set -- $prefill; p=$#; first=$1
set -- $decode; d=$#; last=$1
[ "$p" -gt 0 ] && [ "$d" -gt 0 ] || {{ echo "router shim: no prefill or no decode server" >&2; exit 2; }}
knobs=$(cat "$SHIM_POOLS/$first") || exit 2
ptp=$(printf '%s' "$knobs" | sed -n 's/.* --tp \([0-9]*\).*/\1/p')
dtp=$(sed -n 's/.* --tp \([0-9]*\).*/\1/p' "$SHIM_POOLS/$last")
knobs=$(printf '%s' "$knobs" | sed 's/ --tp [0-9]*//; s/ --dp [0-9]*//')
echo "router: $p prefill ($prefill) and $d decode ($decode) by $policy at $port"
echo "pid $$"
exec {goodput} serve --profile engine --model "$SHIM_MODEL" --gpu "$SHIM_GPU" --speed 20 -q --progress none $knobs \
  --pd "$p:${{d}}xTP${{dtp:-1}}" --tp "${{ptp:-1}}" --router "$router" --host 127.0.0.1 --port "$port"
"#
    );
    // Each --prefill URL [BOOTSTRAP_PORT] and --decode URL, by the URL's port.
    let urls = r#"    --prefill) prefill="$prefill ${2##*:}"; shift 2
      case "$1" in [0-9]*) shift;; esac;;
    --decode) decode="$decode ${2##*:}"; shift 2;;
    --worker-urls) shift
      while [ $# -gt 0 ]; do case "$1" in --*) break;; *) workers="$workers ${1##*:}"; shift;; esac; done;;
    --policy) policy=$2; shift 2;;
    --host|--prometheus-port) shift 2;;
    --port) port=$2; shift 2;;
"#;
    // A checkpoint's width is read from its name, as the servers read it from its config.
    let width = r#"case "$model" in
  *-FP4|*-NVFP4) args="$args --precision fp4";;
  *-AWQ-INT4|*-AWQ) args="$args --precision int4";;
  *.w8a16) args="$args --precision int8";;
esac
"#;
    let vllm = format!(
        r#"#!/bin/sh
[ "$1" = serve ] || {{ echo "vllm shim: only serve" >&2; exit 2; }}
model=$2; shift 2
args=""; addr=""; role=""; gpus=$CUDA_VISIBLE_DEVICES; tp=""; dp=""; ep=""
{width}while [ $# -gt 0 ]; do
  case "$1" in
    --tensor-parallel-size) tp=$2; args="$args --tp $2"; shift 2;;
    --data-parallel-size) dp=$2; args="$args --dp $2"; shift 2;;
    --enable-expert-parallel) ep=1; shift;;
    --pipeline-parallel-size) args="$args --pp $2"; shift 2;;
    --quantization) args="$args --precision $2"; shift 2;;
    --dtype) args="$args --precision bf16"; shift 2;;
    --speculative-config)
      k=$(printf '%s' "$2" | sed -n 's/.*"num_speculative_tokens":\([0-9]*\).*/\1/p')
      args="$args --spec-tokens $k"; shift 2;;
    --kv-transfer-config)
      case "$2" in *'"kv_connector":"NixlConnector"'*) ;; *) echo "vllm shim: not NIXL: $2" >&2; exit 2;; esac
      role=$(printf '%s' "$2" | sed -n 's/.*"kv_role":"\([a-z_]*\)".*/\1/p'); shift 2;;
    --served-model-name|--kv-cache-dtype|--max-num-seqs|--max-num-batched-tokens|--gpu-memory-utilization)
      args="$args $1 $2"; shift 2;;
    --host) addr="$addr $1 $2"; shift 2;;
    --port) port=$2; addr="$addr $1 $2"; shift 2;;
    *) echo "vllm shim: unknown flag $1" >&2; exit 2;;
  esac
done
# vLLM spreads the experts over every GPU of TP × DP.
[ -n "$ep" ] && args="$args --ep $(( ${{tp:-1}} * ${{dp:-1}} ))"
"#
    );
    let sglang = format!(
        r#"#!/bin/bash
if [ "$1" = -c ]; then
  # A script's wait for a server's /health: GET it, 200 or not.
  where=${{3#http://}}
  exec 3<>"/dev/tcp/${{where%%:*}}/$(echo "${{where#*:}}" | cut -d/ -f1)" 2>/dev/null || exit 1
  printf 'GET /%s HTTP/1.0\r\n\r\n' "${{where#*/}}" >&3
  IFS= read -r status <&3 || exit 1
  case "$status" in "HTTP/1."?" 200"*) exit 0;; *) exit 1;; esac
fi
if [ "$1 $2" = "-m sglang_router.launch_router" ]; then
  shift 2
  prefill=""; decode=""; port=""; workers=""; policy=""; poll=""
  while [ $# -gt 0 ]; do
    case "$1" in
    --pd-disaggregation) shift;;
{urls}    --worker-load-check-interval) poll=$2; shift 2;;
    *) echo "sglang router shim: unknown flag $1" >&2; exit 2;;
    esac
  done
{route}fi
[ "$1 $2" = "-m sglang.launch_server" ] || {{ echo "python3 shim: only -m sglang.launch_server" >&2; exit 2; }}
shift 2
model=""
args=""; addr=""; role=""; gpus=""; tp=""; dp=""; dpa=""; mixed=""
while [ $# -gt 0 ]; do
  case "$1" in
    --model-path) model=$2; shift 2;;
    --speculative-num-steps) args="$args --spec-tokens $2"; shift 2;;
    --speculative-algorithm|--speculative-draft-model-path|--speculative-eagle-topk|--speculative-num-draft-tokens)
      shift 2;;
    --tp-size) tp=$2; shift 2;;
    --dp-size) dp=$2; args="$args --dp $2"; shift 2;;
    --ep-size) args="$args --ep $2"; shift 2;;
    --enable-dp-attention) dpa=1; shift;;
    --pp-size) args="$args --pp $2"; shift 2;;
    --quantization) args="$args --precision $2"; shift 2;;
    --dtype) args="$args --precision bf16"; shift 2;;
    --kv-cache-dtype) args="$args --kv-cache-dtype fp8"; shift 2;;
    --max-running-requests) args="$args --max-num-seqs $2"; shift 2;;
    --chunked-prefill-size) args="$args --max-num-batched-tokens $2"; shift 2;;
    --mem-fraction-static) args="$args --gpu-memory-utilization $2"; shift 2;;
    --disaggregation-mode) role=$2; shift 2;;
    --disaggregation-transfer-backend)
      [ "$2" = nixl ] || {{ echo "sglang shim: not NIXL: $2" >&2; exit 2; }}; shift 2;;
    --disaggregation-bootstrap-port) shift 2;;
    --base-gpu-id) gpus="from $2"; shift 2;;
    --load-balance-method)
      case "$2" in
        round_robin) args="$args --router round-robin";; total_requests) args="$args --router least-loaded";;
        *) echo "sglang shim: load balance $2" >&2; exit 2;;
      esac; shift 2;;
    --served-model-name) args="$args $1 $2"; shift 2;;
    --enable-metrics) shift;;
    --enable-mixed-chunk) mixed=1; shift;;
    --host) addr="$addr $1 $2"; shift 2;;
    --port) port=$2; addr="$addr $1 $2"; shift 2;;
    *) echo "sglang shim: unknown flag $1" >&2; exit 2;;
  esac
done
# SGLang computes prompts and decodes in separate steps unless mixed chunks
# are on; a disaggregated instance does one or the other.
[ -z "$mixed" ] && [ -z "$role" ] && args="$args --no-mixed-batches"
# SGLang's scheduler, a disaggregated instance's too: the router serves the
# pools as one engine, whose decode instance reserves before the prefill.
args="$args --scheduler sglang"
# With DP attention --tp-size counts every GPU, each rank's attention on TP / DP.
[ -n "$dpa" ] && tp=$(( ${{tp:-1}} / ${{dp:-1}} ))
[ -n "$tp" ] && args="$args --tp $tp"
{width}"#
    );
    let router = format!(
        r#"#!/bin/sh
prefill=""; decode=""; port=""; workers=""; policy=""
while [ $# -gt 0 ]; do
  case "$1" in
    --vllm-pd-disaggregation) shift;;
{urls}    *) echo "vllm-router shim: unknown flag $1" >&2; exit 2;;
  esac
done
{route}"#
    );
    for (name, text) in
        [("vllm", format!("{vllm}{run}")), ("python3", format!("{sglang}{run}")), ("vllm-router", router)]
    {
        executable(&bin.join(name), &text);
    }
    bin
}

/// Writes `text` to `path` as a program anyone may run (a stand-in for a
/// server's or router's binary on a test's PATH).
fn executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The sweep command a grid's header names (after `goodput sweep`).
fn header_sweep(grid_text: &str) -> &str {
    grid_text
        .lines()
        .find_map(|l| l.strip_prefix("#   goodput sweep "))
        .unwrap_or_else(|| panic!("no sweep command in the header: {grid_text}"))
}

/// The sweep a grid's header names, run as written (and `extra`) in `dir`
/// through the server shims on GPU `gpu` (the engine's model is the
/// sweep's `--model`, the catalog's name: a checkpoint's id is not), the servers
/// of a script keeping their knobs in `dir/servers`: its output, which must
/// be a success.
fn run_header_sweep(dir: &Path, grid_text: &str, gpu: &str, extra: &[&str]) -> std::process::Output {
    let mut words = shlex::split(header_sweep(grid_text)).unwrap();
    words.extend(extra.iter().map(|w| w.to_string()));
    let path = format!("{}:{}", server_shims(dir).display(), std::env::var("PATH").unwrap_or_default());
    let o = Command::new(BIN)
        .arg("sweep")
        .args(&words)
        .env("PATH", path)
        .env("SHIM_GPU", gpu)
        // The engine's model is the sweep's --model (a catalog name).
        .env("SHIM_MODEL", words.iter().skip_while(|w| *w != "--model").nth(1).map_or("llama-3.1-8b", String::as_str))
        .env("SHIM_POOLS", dir.join("servers"))
        // The scripts' GPUs count from 0 where nothing narrows them.
        .env_remove("CUDA_VISIBLE_DEVICES")
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    o
}

/// `goodput plan -q` of llama-3.1-8b on two H100s at $2 an hour, with
/// `args`, its frontier written to `plan` and its grid to `grid`, which
/// must succeed: the grid's text.
fn plan_grid(args: &[&str], plan: &Path, grid: &Path) -> String {
    plan_grid_of("llama-3.1-8b", "2", args, plan, grid)
}

/// The same of `model` on up to `gpus` H100s.
fn plan_grid_of(model: &str, gpus: &str, args: &[&str], plan: &Path, grid: &Path) -> String {
    let o = goodput()
        .args(["plan", "-q", "--model", model, "--gpu", "h100=2", "--gpus", gpus])
        .args(args)
        .arg("-o")
        .arg(plan)
        .arg("--grid-out")
        .arg(grid)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(grid).unwrap()
}

/// Every log in a measured grid's folder of logs, one after another.
fn all_logs(logs: &Path) -> String {
    std::fs::read_dir(logs).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap_or_default()).collect()
}

/// `goodput compare PLAN MEASURED -o OUT`, which must succeed: its
/// document and what it printed.
fn compare_plan(plan: &Path, measured: &Path, out: &Path) -> (Value, String) {
    let o = goodput().arg("compare").arg(plan).arg(measured).arg("-o").arg(out).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (read_json(out), String::from_utf8_lossy(&o.stdout).into_owned())
}

/// From a plan to a measurement: `plan --grid-out` writes the frontier's
/// configurations with the server's command for each (vLLM's, and
/// SGLang's with --serve-engine sglang), and the sweep that measures them;
/// that sweep, run as written (the server's flags taken by the simulated
/// engine), starts each configuration, and its measured frontier pairs
/// with the plan's configuration for configuration.
#[test]
fn a_plans_grid_is_measured_by_the_sweep_it_names() {
    for (engine, starts) in [
        ("vllm", "vllm serve meta-llama/Llama-3.1-8B-Instruct --served-model-name llama-3.1-8b"),
        (
            "sglang",
            "python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --served-model-name \
             llama-3.1-8b",
        ),
    ] {
        plan_grid_measured(PlanCase {
            engine,
            gpu: "h100",
            knobs: &["--precision", "fp8"],
            starts,
            each: &["--quantization fp8"],
            started: &["engine: meta-llama/Llama-3.1-8B-Instruct --served-model-name llama-3.1-8b --precision fp8"],
        });
    }
}

/// FP4 on a B200, drafting three tokens a step: each command loads
/// NVIDIA's NVFP4 checkpoint of the model and names the EAGLE-3 head
/// published for it, and the servers started from them draft at that width.
#[test]
fn a_plan_at_fp4_that_drafts_is_measured_with_its_checkpoint_and_drafter() {
    for (engine, starts, drafts) in [
        (
            "vllm",
            "vllm serve nvidia/Llama-3.1-8B-Instruct-FP4 --served-model-name llama-3.1-8b",
            r#"--speculative-config '{"method":"eagle3","model":"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B","num_speculative_tokens":3}'"#,
        ),
        (
            "sglang",
            "python3 -m sglang.launch_server --model-path nvidia/Llama-3.1-8B-Instruct-FP4 --served-model-name \
             llama-3.1-8b",
            "--speculative-algorithm EAGLE3 --speculative-draft-model-path yuhuili/EAGLE3-LLaMA3.1-Instruct-8B \
             --speculative-num-steps 3",
        ),
    ] {
        plan_grid_measured(PlanCase {
            engine,
            gpu: "b200",
            knobs: &["--precision", "fp4", "--spec-tokens", "3"],
            starts,
            each: &[drafts],
            started: &["engine: nvidia/Llama-3.1-8B-Instruct-FP4 ", " --precision fp4", " --spec-tokens 3"],
        });
    }
}

/// A plan measured through its grid: the server, the GPU, the plan's
/// knobs beside the shared ones, how every command starts and what else
/// each holds, and what the engine behind the shim was given.
struct PlanCase<'a> {
    engine: &'a str,
    gpu: &'a str,
    knobs: &'a [&'a str],
    starts: &'a str,
    each: &'a [&'a str],
    /// What the engine behind the shims was given.
    started: &'a [&'a str],
}

fn plan_grid_measured(case: PlanCase) {
    let PlanCase { engine, gpu, knobs, starts, each, started } = case;
    let dir = tempfile::tempdir().unwrap();
    let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", &format!("{gpu}=2"), "--gpus", "2", "--tp", "1,2"])
        .args(["--serve-engine", engine])
        .args(knobs)
        .args(["--max-num-batched-tokens", "2048", "--max-num-seqs", "16"])
        .args(["--concurrency", "2,8", "--requests-per-user", "3", "--input-tokens", "256", "--output-tokens", "16"])
        .args(["--slo", "ttft:p50<=60s", "-o"])
        .arg(&plan)
        .arg("--grid-out")
        .arg(&grid)
        .arg("--html")
        .arg(dir.path().join("plan.html"))
        .arg("--csv")
        .arg(dir.path().join("plan.csv"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    // The best point's command, in the terminal and on the page.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains(&format!("to measure it: {starts}")), "{stdout}");
    let page = std::fs::read_to_string(dir.path().join("plan.html")).unwrap();
    assert!(page.contains(&format!(r#"<code class="serve-command">{starts}"#)));
    let rows = std::fs::read_to_string(dir.path().join("plan.csv")).unwrap();
    assert!(rows.lines().next().unwrap().ends_with(",best,serve_command,note"), "{rows}");
    // No memory share was given: each server takes its own default, as
    // the plan did (SGLang's set for each configuration), so no command
    // names one.
    let memory = if engine == "vllm" { "--gpu-memory-utilization" } else { "--mem-fraction-static" };
    assert!(
        rows.lines().skip(1).all(|r| r.contains(&format!("{starts} ")) && !r.contains(&format!(" {memory} "))),
        "{rows}"
    );
    let planned = read_json(&plan);
    if engine == "sglang" {
        let notes = planned["notes"].as_array().unwrap().iter().filter_map(|n| n.as_str()).collect::<Vec<_>>();
        assert!(
            notes.iter().any(|n| n.contains("SGLang's own --mem-fraction-static default")
                && n.contains("commands leave the flag out")),
            "{notes:?}"
        );
    }
    // Every configuration carries its command; the plan's --model is the name the server answers to.
    for c in configs(&planned) {
        let cmd = c["serve_command"]["command"].as_str().unwrap_or_else(|| panic!("{c}"));
        assert!(cmd.starts_with(starts), "{cmd}");
        let seqs = if engine == "vllm" { "--max-num-seqs 16" } else { "--max-running-requests 16" };
        assert!(cmd.contains(seqs) && each.iter().all(|e| cmd.contains(e)), "{cmd}");
        assert_eq!(c["serve_command"]["server"], engine);
    }
    crate::schema::assert_valid(&planned, "FrontierResult", "a plan with its serve commands");
    let on_frontier: std::collections::BTreeSet<String> = planned["frontier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| configs(&planned)[p["config"].as_u64().unwrap() as usize]["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!on_frontier.is_empty(), "{planned}");

    let text = std::fs::read_to_string(&grid).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let ids: std::collections::BTreeSet<String> =
        table["config"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap().to_string()).collect();
    let best = &configs(&planned)[planned["best"]["at"]["config"].as_u64().unwrap() as usize]["id"];
    assert!(ids.contains(best.as_str().unwrap()), "the best is in the grid: {text}");
    assert!(on_frontier.is_subset(&ids), "{on_frontier:?} in {ids:?}");
    assert!(err.contains("measure it with:"), "{err}");
    assert!(text.contains(&format!("#   goodput compare {}", plan.display())), "{text}");
    let t = Instant::now();
    let o = run_header_sweep(dir.path(), &text, gpu, &["-n", "24", "--progress", "none"]);
    let err = String::from_utf8_lossy(&o.stderr);
    eprintln!("{} configurations of the plan measured with {engine} in {:.1} s", ids.len(), t.elapsed().as_secs_f64());
    // The knobs reach each server in its launch script: no warning that they do not.
    assert!(!err.contains("same server"), "{err}");
    let measured = read_json(&dir.path().join("grid.measured.json"));
    for c in configs(&measured) {
        assert_eq!(c["status"], "ok", "{c}");
        assert!(!c["points"].as_array().unwrap().is_empty(), "{c}");
    }
    let logs = all_logs(&dir.path().join("grid.measured.logs"));
    assert!(started.iter().all(|s| logs.contains(s)), "{logs}");
    // The sweep's own prediction and the plan's both pair every measured configuration, id for id.
    let pairs = |c: &Value| -> Vec<(String, String)> { compared(c).1 };
    let own = read_json(&dir.path().join("grid.measured.compare.json"));
    assert!(pairs(&own).iter().all(|(m, p)| m == p) && pairs(&own).len() == ids.len(), "{own}");
    let (c, said) = compare_plan(&plan, &dir.path().join("grid.measured.json"), &dir.path().join("both.json"));
    assert!(said.contains("\nchoice: "), "{said}");
    // The plan's choice was in the grid, so it was measured and is judged:
    // agreed with or not, or (on a machine busy enough that these short
    // points at 20 times real speed drift) left unjudged, saying why.
    let choice = &c["choice"];
    assert_eq!(choice["measured_partner"], choice["predicted_best"], "{choice}");
    let unsteady = choice["verdict"].as_str().is_some_and(|v| v.contains("were not steady"));
    assert!(choice["agrees"].is_boolean() || (choice["agrees"].is_null() && unsteady), "{choice}");
    // The grid kept the plan's ids: the configuration is named once
    // ("…, the prediction's best, …", or where its points were not steady
    // "…, the prediction's best as measured, …", which a busy machine gave).
    let verdict = choice["verdict"].as_str().unwrap();
    assert!(
        verdict.contains(&format!("{}, the prediction's best", choice["predicted_best"].as_str().unwrap())),
        "{verdict}"
    );
    assert!(!c["notes"].to_string().contains("the predicted model is"), "llama-3.1-8b is Llama-3.1-8B: {}", c["notes"]);
    crate::schema::assert_valid(&c, "FrontierComparison", "a plan's grid measured and compared");
    let mut paired: Vec<String> = pairs(&c)
        .into_iter()
        .map(|(m, p)| {
            assert_eq!(m, p);
            m
        })
        .collect();
    paired.sort();
    assert_eq!(paired, ids.into_iter().collect::<Vec<_>>(), "{c}");
}

/// Prefill apart from decode, from a plan to a measurement: the grid's
/// configuration is a script that starts a prefill server and a decode
/// server on a GPU each and, once both answer, the router in front; the
/// sweep runs it through the shims (vLLM's NIXL connector and
/// `vllm-router`, SGLang's `--disaggregation-mode` and its router), every
/// process it started ends with it, and compare pairs it with the plan's
/// prediction.
#[test]
fn a_plan_that_runs_prefill_apart_is_measured_through_its_servers_and_router() {
    for (engine, roles) in [
        ("vllm", ["instance: kv_producer on GPUs 0 at ", "instance: kv_consumer on GPUs 1 at "]),
        ("sglang", ["instance: prefill on GPUs from 0 at ", "instance: decode on GPUs from 1 at "]),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
        let args = ["--tp", "1", "--pd", "1:1", "--serve-engine", engine, "--max-num-batched-tokens", "512"];
        let load =
            ["--concurrency", "2,8", "--requests-per-user", "3", "--input-tokens", "2048", "--output-tokens", "16"];
        let text =
            plan_grid(&[&args[..], &load, &["--max-num-seqs", "16", "--slo", "ttft:p50<=60s"]].concat(), &plan, &grid);
        let table: toml::Table = toml::from_str(&text).unwrap();
        let apart: Vec<&toml::Value> =
            table["config"].as_array().unwrap().iter().filter(|c| c.get("pd").is_some()).collect();
        assert_eq!(apart.len(), 1, "{text}");
        let id = apart[0]["id"].as_str().unwrap().to_string();
        let launch = apart[0]["launch"].as_str().unwrap();
        assert!(launch.starts_with("PORT=\"$0\"\n# 1 prefill and 1 decode "), "{launch}");
        // Its ports: the router's, the servers', their side channels and the router's metrics'.
        assert_eq!(apart[0]["ports"].as_integer(), Some(6), "{text}");
        assert!(!text.contains("# Left out"), "{text}");
        run_header_sweep(dir.path(), &text, "h100", &["-n", "24", "--progress", "none"]);
        let measured = read_json(&dir.path().join("grid.measured.json"));
        for c in configs(&measured) {
            assert_eq!(c["status"], "ok", "{c}");
            assert!(c["points"].as_array().unwrap().iter().all(|p| p["completed"].as_u64() > Some(0)), "{c}");
        }
        let logs_dir = dir.path().join("grid.measured.logs");
        let logs = all_logs(&logs_dir);
        // Each instance on a GPU of its own, and the router over both, as one engine of their pools.
        assert!(roles.iter().all(|r| logs.contains(r)), "{logs}");
        assert!(logs.contains("router: 1 prefill (") && logs.contains(") by cache_aware at "), "{logs}");
        // One instance a pool: its router has nothing to pick, and the grid names none.
        assert!(apart[0].get("router").is_none(), "{text}");
        // The sweep read each server's own metrics (the grid's `metrics`), not the router's.
        let sweep_doc = std::fs::read_dir(&logs_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            // By its own name: the temporary folder's may hold "1P" too (a
            // random name had matched another configuration's sweep).
            .find(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.ends_with(".sweep.json") && name.contains("1P")
            })
            .unwrap_or_else(|| {
                let names: Vec<_> = std::fs::read_dir(&logs_dir).unwrap().map(|e| e.unwrap().file_name()).collect();
                panic!("no sweep document of {id} in {names:?}")
            });
        let sweep_doc = read_json(&sweep_doc);
        let urls = &sweep_doc["points"][0]["result"]["server_signals"]["urls"];
        let urls: Vec<&str> =
            urls.as_array().unwrap_or_else(|| panic!("{sweep_doc}")).iter().filter_map(|u| u.as_str()).collect();
        assert_eq!(urls.len(), 2, "{urls:?}");
        assert!(urls.iter().all(|u| u.starts_with("http://127.0.0.1:") && u.ends_with("/metrics")), "{urls:?}");
        assert_all_gone(&logged_pids(&logs_dir));
        let both = compare_plan(&plan, &dir.path().join("grid.measured.json"), &dir.path().join("both.json")).0;
        let pairs = compared(&both).1;
        assert!(pairs.contains(&(id.clone(), id.clone())), "{id} in {pairs:?}");
    }
}

/// A mixture of experts with its experts over two data-parallel ranks,
/// from a plan to a measurement: vLLM's `--data-parallel-size` with
/// `--enable-expert-parallel`, SGLang's DP attention (`--tp-size` every
/// GPU, `--enable-dp-attention`, `--ep-size`; it had no command), each
/// started through the shims as the engine of those knobs, and paired with
/// the plan's prediction.
#[test]
fn a_plan_of_experts_over_data_parallel_ranks_is_measured() {
    for (engine, launch) in [
        ("vllm", "--data-parallel-size 2 --enable-expert-parallel"),
        ("sglang", "--tp-size 2 --dp-size 2 --enable-dp-attention --ep-size 2"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
        let text = plan_grid_of(
            "qwen3-30b-a3b",
            "2",
            &[
                &["--tp", "1", "--ep", "2", "--precision", "fp8", "--serve-engine", engine, "--max-num-seqs", "16"],
                &MOE_LOAD[..],
            ]
            .concat(),
            &plan,
            &grid,
        );
        let table: toml::Table = toml::from_str(&text).unwrap();
        let experts: Vec<&toml::Value> =
            table["config"].as_array().unwrap().iter().filter(|c| c.get("ep").is_some()).collect();
        // Each budget the frontier keeps is launched the same way (under
        // SGLang's DP attention the ranks split the budget, so two may).
        let Some(&first) = experts.first() else { panic!("a configuration of EP 2: {text}") };
        for c in &experts {
            assert!(c["launch"].as_str().unwrap().contains(launch), "{text}");
        }
        let logs = measured_and_paired(dir.path(), &text, &plan, first["id"].as_str().unwrap());
        // The engine ran the plan's layout: one rank's attention on a GPU, experts over both.
        assert!(logs.contains("engine: Qwen/Qwen3-30B-A3B"), "{logs}");
        let layout = |l: &str| l.contains(" --dp 2") && l.contains(" --ep 2") && !l.contains(" --tp 2");
        assert!(logs.lines().any(|l| l.starts_with("engine: ") && layout(l)), "{logs}");
    }
}

/// Two expert-parallel groups on four GPUs (TP 1, EP 2): each group is a
/// server of its own (vLLM's experts span every GPU of a server; SGLang's
/// its DP attention's), behind the router's `power_of_two`, which the plan
/// predicts; measured through the shims as the engine of those groups, and
/// paired with the plan's prediction.
#[test]
fn expert_parallel_groups_are_replicas_behind_a_router() {
    for engine in ["vllm", "sglang"] {
        let dir = tempfile::tempdir().unwrap();
        let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
        let text = plan_grid_of(
            "qwen3-30b-a3b",
            "4",
            &[
                &[
                    "--tp",
                    "1",
                    "--ep",
                    "2",
                    "--pp",
                    "1",
                    "--precision",
                    "fp8",
                    "--serve-engine",
                    engine,
                    "--max-num-seqs",
                    "16",
                ],
                &MOE_LOAD[..],
            ]
            .concat(),
            &plan,
            &grid,
        );
        let table: toml::Table = toml::from_str(&text).unwrap();
        let groups = table["config"].as_array().unwrap().iter().find(|c| c["dp"].as_integer() == Some(4));
        let groups = groups.unwrap_or_else(|| panic!("no configuration of two groups: {text}"));
        let launch = groups["launch"].as_str().unwrap();
        assert!(launch.contains("--policy power_of_two") && launch.contains("# 2 "), "{launch}");
        // SGLang's router polls the loads it compares: every second, and the
        // plan, which split the users evenly, says what that leaves out.
        let sglang = engine == "sglang";
        assert_eq!(launch.contains("--worker-load-check-interval 1"), sglang, "{launch}");
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&plan).unwrap()).unwrap();
        let polled =
            doc["notes"].as_array().unwrap().iter().any(|n| {
                n.as_str().is_some_and(|n| n.starts_with("SGLang's router runs power-of-two on loads it polls"))
            });
        assert_eq!(polled, sglang, "{}", doc["notes"]);
        // And the header's sweep predicts it on the same polls.
        assert_eq!(text.contains("--router-poll 1s --estimate"), sglang, "{text}");
        // The grid's own prediction takes the router the script starts.
        assert_eq!(groups["router"].as_str(), Some("power-of-two"), "{text}");
        let logs = measured_and_paired(dir.path(), &text, &plan, groups["id"].as_str().unwrap());
        assert!(logs.contains("router: 2 replicas (") && logs.contains("by power_of_two"), "{logs}");
        // The shim's engine routes as the router it stands for: SGLang's on
        // the loads it polls every second.
        assert_eq!(logs.contains("loads polled every 1 s"), engine == "sglang", "{logs}");
    }
}

/// A mixture of experts' plans' load: small, so that its points through
/// the shims take a second.
const MOE_LOAD: [&str; 10] = [
    "--concurrency",
    "2,8",
    "--requests-per-user",
    "3",
    "--input-tokens",
    "256",
    "--output-tokens",
    "16",
    "--slo",
    "ttft:p50<=60s",
];

/// The grid `text` in `dir` measured by its header's sweep (24 requests a
/// point): every configuration ok, every process it started gone, and
/// configuration `id` paired with the plan's prediction of it by compare.
/// Its logs.
fn measured_and_paired(dir: &Path, text: &str, plan: &Path, id: &str) -> String {
    run_header_sweep(dir, text, "h100", &["-n", "24", "--progress", "none"]);
    let measured = read_json(&dir.join("grid.measured.json"));
    let logs_dir = dir.join("grid.measured.logs");
    // A failure names its configuration, error and log's tail first (a
    // whole document is cut short where a test's output is).
    let failed: Vec<String> = configs(&measured)
        .iter()
        .filter(|c| c["status"] != "ok")
        .map(|c| format!("{} {}: {}\n{}", c["id"], c["status"], c["error"], c["log_tail"]))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}\n{}", all_logs(&logs_dir));
    assert_all_gone(&logged_pids(&logs_dir));
    let both = compare_plan(plan, &dir.join("grid.measured.json"), &dir.join("both.json")).0;
    assert!(compared(&both).1.contains(&(id.to_string(), id.to_string())), "{id}: {both}");
    all_logs(&logs_dir)
}

/// A script of several servers run by a shell as a user runs it: its
/// servers take the first GPUs of the ones CUDA_VISIBLE_DEVICES leaves it
/// (a shared machine's share), it refuses to start on fewer, and when one
/// of its processes ends (here the router) or it is interrupted, it ends
/// every server it started.
#[test]
fn a_script_of_several_servers_takes_its_gpus_and_ends_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "4", "--tp", "1"])
        .args(["--pd", "2xTP1:1xTP2", "--concurrency", "2", "--input-tokens", "128", "--output-tokens", "8", "-o"])
        .arg(&plan)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let planned = read_json(&plan);
    let c = configs(&planned).iter().find(|c| c["params"]["pd"] == "2:1xTP2").unwrap_or_else(|| panic!("{planned}"));
    assert_eq!(c["serve_command"]["script"], true, "{c}");
    let script = c["serve_command"]["command"].as_str().unwrap();
    // Servers that say where they run and wait; a router that ends at once.
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, body) in [
        ("vllm", "echo \"pid $$ on GPUs $CUDA_VISIBLE_DEVICES\"\nexec sleep 60\n"),
        ("python3", "exit 0\n"),
        ("vllm-router", "echo \"pid $$ router\"\nsleep 0.5\n"),
    ] {
        executable(&bin.join(name), &format!("#!/bin/sh\n{body}"));
    }
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = |visible: &str| {
        let o = Command::new("sh")
            .args(["-c", script])
            .env("PATH", &path)
            .env("PORT", "9")
            .env("CUDA_VISIBLE_DEVICES", visible)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (code, out, _) = run("4,5,6,7");
    assert_eq!(code, Some(1), "the script ends when its router does: {out}");
    for gpus in ["on GPUs 4\n", "on GPUs 5\n", "on GPUs 6,7\n"] {
        assert!(out.contains(gpus), "{gpus:?} in {out}");
    }
    let pids: Vec<i32> = out.lines().filter_map(|l| l.strip_prefix("pid ")?.split(' ').next()?.parse().ok()).collect();
    assert_eq!(pids.len(), 4, "{out}");
    assert_all_gone(&pids);
    let (code, out, err) = run("4,5");
    assert_eq!(code, Some(1));
    assert!(err.contains("these servers take 4 GPUs; CUDA_VISIBLE_DEVICES=4,5 names fewer") && out.is_empty(), "{err}");
}

/// The router a trace plan put in front of its replicas is the one
/// measured: vLLM's replicas behind `vllm-router --policy cache_aware` for
/// prefix-aware, SGLang's own `--load-balance-method total_requests` for
/// least-loaded; the header's sweep predicts them with the same router.
#[test]
fn a_trace_plans_router_is_the_one_measured() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let lines: Vec<String> = (0..24)
        .map(|i| {
            format!(
                r#"{{"timestamp": {}, "input_length": 1024, "output_length": 16, "hash_ids": [{}, {}]}}"#,
                i * 150,
                i % 3,
                i % 3 + 10
            )
        })
        .collect();
    std::fs::write(&trace, lines.join("\n")).unwrap();
    for (engine, router, measured) in [
        ("vllm", "prefix-aware", "router: 2 replicas ("),
        ("sglang", "least-loaded", "engine: meta-llama/Llama-3.1-8B-Instruct --served-model-name llama-3.1-8b"),
    ] {
        let (plan, grid) = (dir.path().join(format!("{engine}.json")), dir.path().join(format!("{engine}.toml")));
        let trace = trace.to_str().unwrap();
        let args = ["--tp", "1", "--serve-engine", engine, "--precision", "fp8", "--max-num-seqs", "16"];
        let replay = ["--router", router, "--trace", trace, "--trace-speed", "1,4", "--slo", "ttft:p50<=60s"];
        let text = plan_grid(&[&args[..], &replay].concat(), &plan, &grid);
        let sweep = header_sweep(&text);
        let table: toml::Table = toml::from_str(&text).unwrap();
        let replicas = table["config"].as_array().unwrap().iter().find(|c| c["dp"].as_integer() == Some(2));
        let replicas = replicas.unwrap_or_else(|| panic!("no configuration of two replicas: {text}"));
        let launch = replicas["launch"].as_str().unwrap();
        // The grid carries each configuration's router, for --estimate too.
        assert_eq!(replicas["router"].as_str(), Some(router), "{text}");
        assert!(!sweep.contains("--router"), "{sweep}");
        match engine {
            "vllm" => assert!(launch.contains("--policy cache_aware"), "{launch}"),
            _ => assert!(launch.contains("--dp-size 2 --load-balance-method total_requests"), "{launch}"),
        }
        run_header_sweep(dir.path(), &text, "h100", &["--progress", "none"]);
        let stem = grid.file_stem().unwrap().to_string_lossy().into_owned();
        let result = read_json(&dir.path().join(format!("{stem}.measured.json")));
        assert!(configs(&result).iter().all(|c| c["status"] == "ok"), "{result}");
        let logs_dir = dir.path().join(format!("{stem}.measured.logs"));
        let logs = all_logs(&logs_dir);
        assert!(logs.contains(measured), "{logs}");
        if engine == "sglang" {
            assert!(logs.contains("--dp 2 --router least-loaded"), "{logs}");
        }
        // Its prediction ran with its router; SGLang's dense replicas behind
        // its controller (the command's --load-balance-method), which the
        // prediction names in the router's place.
        let id = replicas["id"].as_str().unwrap();
        let predicted = std::fs::read_dir(&logs_dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let name = p.file_name().unwrap_or_default().to_string_lossy();
                name.ends_with(".predicted.json") && name.contains("tp1x2")
            })
            .unwrap_or_else(|| panic!("no prediction of {id} in {}", logs_dir.display()));
        let predicted = read_json(&predicted).to_string();
        match engine {
            "vllm" => assert!(predicted.contains(&format!("\"router\":\"{router}\"")), "{predicted}"),
            _ => assert!(predicted.contains("\"load_balance_method\":\"total-requests\""), "{predicted}"),
        }
        assert_all_gone(&logged_pids(&logs_dir));
    }
}

/// The simulated engine's rehearsal of a disaggregated configuration of
/// several units runs them all as its pools: its command gives `--pd` every
/// unit's instances and no `--dp` beside them (which the engine refuses; the
/// command had given both), and the server it starts answers.
#[test]
fn a_rehearsal_of_several_disaggregated_units_starts_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let o = goodput()
        .args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "4", "--tp", "1", "--pd", "1:1"])
        .args(["--serve-engine", "goodput", "--precision", "fp8", "--max-num-seqs", "16"])
        .args(["--concurrency", "2,8", "--requests-per-user", "2", "--input-tokens", "256", "--output-tokens", "16"])
        .arg("-o")
        .arg(&plan)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let planned = read_json(&plan);
    let units = configs(&planned)
        .iter()
        .find(|c| c["params"]["pd"] == "1:1" && c["params"]["dp"] == "2")
        .unwrap_or_else(|| panic!("no configuration of two 1:1 units: {planned}"));
    let command = units["serve_command"]["command"].as_str().unwrap();
    assert!(command.contains(" --pd 2:2 ") && !command.contains("--dp"), "{command}");
    let words = shlex::split(command).unwrap();
    let args: Vec<&String> = words.iter().skip(2).filter(|w| *w != "-q").collect();
    let (url, said, _server) = crate::cmd::serve(&args);
    assert!(said.contains("2 prefill"), "{said}");
    let o = goodput()
        .args(["bench", "--url", &url, "--model", "llama-3.1-8b", "-n", "6", "-c", "3", "--input-tokens", "64"])
        .args(["--output-tokens", "8", "--progress", "none", "-q"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Swept from a grid of it as the plan names it (dp 2 beside pd 1:1):
    // its GPUs are the two units' four, and --estimate predicts the same
    // pools (it had refused --dp beside --pd, and counted two GPUs).
    let grid = dir.path().join("grid.toml");
    let mut table = toml::Table::new();
    for (k, v) in units["params"].as_object().unwrap() {
        table.insert(k.clone(), toml::Value::String(v.as_str().unwrap().to_string()));
    }
    table.insert("launch".into(), toml::Value::String(format!("exec {command} --port \"$0\"")));
    let doc = toml::toml! { config = [table] };
    std::fs::write(&grid, toml::to_string(&doc).unwrap()).unwrap();
    let measured = dir.path().join("m.json");
    let o = goodput()
        .args(["sweep", "--serve-cmd", "sh -c {launch} {port}", "--serve-grid"])
        .arg(&grid)
        .args(["--model", "llama-3.1-8b", "--concurrency", "4", "-n", "8", "--input-tokens", "64"])
        .args(["--output-tokens", "8", "--progress", "none", "--estimate", "-o"])
        .arg(&measured)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(!err.contains("tp × pp × dp"), "no disagreement over its GPUs: {err}");
    let m = read_json(&measured);
    assert_eq!(configs(&m)[0]["gpus"], 4, "{m}");
    let predicted = read_json(&dir.path().join("m.predicted.json"));
    assert_eq!(
        (configs(&predicted)[0]["status"].as_str(), configs(&predicted)[0]["gpus"].as_u64()),
        (Some("ok"), Some(4))
    );
    assert_eq!(compared(&read_json(&dir.path().join("m.compare.json"))).1.len(), 1);
}

/// `--serve-checkpoint` and `--serve-drafter` give the weights of a width
/// and the drafter where none is published (or another is wanted): each
/// command at that width loads them; a flag that says too little, or names
/// a drafter with nothing drafting, is refused before the search.
#[test]
fn the_weights_and_drafter_given_are_the_ones_started() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let base = |extra: &[&str]| {
        let mut c = goodput();
        c.args(["plan", "-q", "--model", "llama-3.1-8b", "--gpu", "h100=2", "--gpus", "1"])
            .args(["--max-num-batched-tokens", "2048"])
            .args(["--concurrency", "2", "--requests-per-user", "2", "--input-tokens", "128", "--output-tokens", "8"])
            .args(["--serve-model", "my-org/tuned"])
            .args(extra);
        c
    };
    let o = base(&["--precision", "bf16,int4", "--spec-tokens", "2"])
        .args(["--serve-checkpoint", "int4=/ckpt/tuned-awq", "--serve-drafter", "draft=my-org/tuned-1b", "-o"])
        .arg(&plan)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc = read_json(&plan);
    let commands: Vec<&str> = configs(&doc).iter().map(|c| c["serve_command"]["command"].as_str().unwrap()).collect();
    assert_eq!(commands.len(), 2, "{doc}");
    let drafts =
        r#"--speculative-config '{"method":"draft_model","model":"my-org/tuned-1b","num_speculative_tokens":2}'"#;
    assert!(commands.iter().all(|c| c.ends_with(drafts)), "{commands:?}");
    assert!(commands
        .iter()
        .any(|c| c.starts_with("vllm serve my-org/tuned --served-model-name llama-3.1-8b --dtype bfloat16")));
    assert!(commands
        .iter()
        .any(|c| c.starts_with("vllm serve /ckpt/tuned-awq --served-model-name llama-3.1-8b --max-num-seqs")));
    for (flags, says) in [
        (&["--serve-drafter", "my-org/tuned-1b", "--spec-tokens", "2"][..], "say what drafts"),
        (&["--serve-drafter", "mtp"][..], "which --spec-tokens turns on"),
        (&["--serve-checkpoint", "fp5=x"][..], "--serve-checkpoint fp5=x"),
        (&["--serve-checkpoint", "fp4=a", "--serve-checkpoint", "nvfp4=b"][..], "names fp4 twice"),
    ] {
        let o = base(flags).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{flags:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// `--dry-run` prints each configuration's command as it would start (its
/// credentials masked) and the sweep's longest time, and starts and writes
/// nothing.
#[test]
fn a_dry_run_shows_the_commands_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let o = goodput()
        .args(["sweep", "--serve-cmd", "sh -c 'echo started > started' {port} {seqs} --hf-token hf_dryrun_secret"])
        .args(["--serve-grid", "seqs=4,16"])
        .args(["--concurrency", "1", "-n", "2", "--dry-run", "-o"])
        .arg(dir.path().join("f.json"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{said}");
    assert!(said.contains("dry run: 2 configurations, none started"), "{said}");
    assert!(said.contains("  2/2 seqs=16: sh -c 'echo started > started' 8000 16 --hf-token '***'\n"), "{said}");
    assert!(!said.contains("hf_dryrun_secret"), "a credential is masked, as the starting line masks it: {said}");
    assert!(said.contains("2 configurations: at most"), "{said}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "a dry run writes nothing: {left:?}");
    // A script of several lines (a plan's launch for several servers) is
    // shown line by line, its credentials masked within it.
    let script = "port=$0\nHF_TOKEN=hf_in_script serve --port \"$port\" &\nroute --api-key sk_in_script --seqs {seqs}";
    let o = goodput()
        .args(["sweep", "--serve-cmd", &format!("sh -c '{script}' {{port}}"), "--serve-grid", "seqs=4;ports=3"])
        .args(["--concurrency", "1", "-n", "2", "--dry-run", "-o"])
        .arg(dir.path().join("g.json"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{said}");
    assert!(
        said.contains(
            "  1/1 seqs=4 ports=3 (ports 8000 to 8002): sh -c SCRIPT 8000, SCRIPT:\n      port=$0\n      HF_TOKEN=*** serve --port \"$port\" &\n      \
             route --api-key *** --seqs 4\n"
        ),
        "{said}"
    );
    assert!(!said.contains("in_script"), "{said}");
}

/// A grid's `metrics` that is no http:// or https:// URL, or names a port
/// other than {port} or {port+N}, or one past its `ports`, is refused
/// before any server starts, with the form it takes; so is a `ports` that
/// is no count.
#[test]
fn a_grids_metrics_must_be_urls_of_its_ports() {
    let url = "is not an http:// or https:// URL (its ports given as {port} or {port+N}";
    for (bad, says) in [
        ("metrics=127.0.0.1:{port}/metrics", url),
        ("metrics=http://h:{ports}/metrics", url),
        // A count of ports, and the metrics within them.
        ("ports=0", "is not a count of ports from 1 to 1024 (how many its server takes from {port} on)"),
        ("ports=x", "ports=x in ports=x is not a count of ports"),
        (
            "ports=3;metrics=http://h:{port+1}/m http://h:{port+3}/m",
            "names {port+3}, past the 3 ports its server takes (ports=3: {port} to {port+2})",
        ),
    ] {
        let o = goodput()
            .args(["sweep", "--serve-cmd", "sh -c 'echo started > started' {port}", "--serve-grid", bad])
            .args(["--concurrency", "1", "-n", "2", "-o", "/dev/null"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && err.contains(says), "{bad}: {err}");
    }
}

/// `plan --serve-engine trtllm`: the grid's script runs through the sweep
/// as written (`sh -c` with the port as `$0`, its options file in a
/// here-document), against a stand-in `trtllm-serve` on the PATH that
/// keeps the options file it was given and serves the simulated engine on
/// the port it was given (no TensorRT-LLM runs here). The options reach
/// the server, the file is gone when the server stops, the missing
/// Prometheus text is a warning, and the measurement pairs with the plan.
#[test]
fn a_tensorrt_llm_grid_runs_through_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
    let (bin, tmp) = (dir.path().join("bin"), dir.path().join("tmp"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    executable(
        &bin.join("trtllm-serve"),
        &format!(
            "#!/bin/sh\nport=; cfg=\nwhile [ $# -gt 0 ]; do\n  case \"$1\" in\n    --port) port=$2; shift;;\n    \
             --config) cfg=$2; shift;;\n  esac\n  shift\ndone\ncp \"$cfg\" '{}' || exit 2\nexec '{}' serve --profile \
             engine --model llama-3.1-8b --served-model-name llama-3.1-8b -q --host 127.0.0.1 --port \"$port\"\n",
            dir.path().join("options.yaml").display(),
            env!("CARGO_BIN_EXE_goodput")
        ),
    );
    let args = ["--tp", "1", "--serve-engine", "trtllm", "--precision", "bf16", "--max-num-batched-tokens", "2048"];
    let load = ["--concurrency", "1,4", "--input-tokens", "128", "--output-tokens", "8"];
    let text = plan_grid_of("llama-3.1-8b", "1", &[&args[..], &load].concat(), &plan, &grid);
    assert!(text.contains("metrics = \"http://127.0.0.1:{port}/prometheus/metrics\""), "{text}");
    let mut words = shlex::split(header_sweep(&text)).unwrap();
    words.extend(["-n", "4", "--progress", "none"].map(String::from));
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let o = goodput()
        .arg("sweep")
        .args(&words)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("/prometheus/metrics failed") && err.contains("404"), "the stand-in serves none: {err}");
    let options = std::fs::read_to_string(dir.path().join("options.yaml")).unwrap();
    assert!(options.starts_with("return_perf_metrics: true\nenable_iter_perf_stats: true\n"), "{options}");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0, "the options file went with the server");
    let measured = read_json(&dir.path().join("grid.measured.json"));
    for c in configs(&measured) {
        assert_eq!(c["status"], "ok", "{c}");
        assert_eq!(c["params"]["scheduler"], "trtllm", "{c}");
    }
    let own = read_json(&dir.path().join("grid.measured.compare.json"));
    let (_, pairs) = compared(&own);
    assert!(!pairs.is_empty() && pairs.iter().all(|(m, p)| m == p), "{own}");
}

/// `plan --serve-engine goodput`: the grid starts `goodput serve`'s
/// simulated engine with every knob, so the whole measurement runs here as
/// it would on GPUs, at real time, and every configuration of the frontier
/// has a command (a drafting one included).
#[test]
fn a_plan_is_rehearsed_on_the_simulated_engine() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, grid) = (dir.path().join("plan.json"), dir.path().join("grid.toml"));
    let knobs = ["--tp", "1,2", "--serve-engine", "goodput", "--spec-tokens", "0,3", "--precision", "fp8"];
    let limits = ["--max-num-batched-tokens", "2048", "--max-num-seqs", "8", "--slo", "ttft:p50<=60s"];
    let load = ["--concurrency", "2,4", "--input-tokens", "128", "--output-tokens", "8"];
    let text = plan_grid(&[&knobs[..], &limits, &load].concat(), &plan, &grid);
    let planned = read_json(&plan);
    for c in configs(&planned) {
        let cmd = c["serve_command"]["command"].as_str().unwrap_or_else(|| panic!("{c}"));
        assert!(
            cmd.contains(" serve --profile engine --model llama-3.1-8b --served-model-name llama-3.1-8b -q --dp "),
            "{cmd}"
        );
        assert_eq!(c["serve_command"]["server"], "goodput");
    }
    assert!(!text.contains("Left out"), "goodput serve starts every configuration: {text}");
    assert!(
        text.contains("spec_tokens = 3") && text.contains("--spec-acceptance 0.7 --spec-draft-cost 0.05"),
        "{text}"
    );
    assert!(text.contains("acceptance the plan assumed (0.7): goodput compare sets the server's own"), "{text}");
    let mut words = shlex::split(header_sweep(&text)).unwrap();
    words.extend(["-n", "8", "--progress", "none"].map(String::from));
    let o = goodput().arg("sweep").args(&words).current_dir(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let measured = read_json(&dir.path().join("grid.measured.json"));
    let ids: Vec<&str> = configs(&measured).iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert!(ids.iter().any(|id| id.contains("spec3")), "a drafting configuration was measured too: {ids:?}");
    for c in configs(&measured) {
        assert_eq!(c["status"], "ok", "{c}");
        for p in c["points"].as_array().unwrap() {
            assert_eq!((p["completed"].as_u64(), p["failed"].as_u64()), (Some(8), Some(0)), "{p}");
        }
    }
    let own = read_json(&dir.path().join("grid.measured.compare.json"));
    let (_, pairs) = compared(&own);
    assert!(pairs.iter().all(|(m, p)| m == p) && pairs.len() == ids.len(), "{own}");
    // The plan's choice, measured.
    let both = dir.path().join("both.json");
    let o =
        goodput().arg("compare").arg(&plan).arg(dir.path().join("grid.measured.json")).arg("-o").arg(&both).output();
    assert!(o.unwrap().status.success());
    let both = read_json(&both);
    let choice = &both["choice"];
    assert_eq!(choice["measured_partner"], choice["predicted_best"], "{choice}");
    // The drafts: the server's counters checked against the acceptance the plan assumed (0.7), which the
    // simulated server drew from; a configuration that does not draft has no check.
    for p in both["pairs"].as_array().unwrap() {
        let drafts = &p["drafts"];
        if !p["predicted"].as_str().unwrap().contains("spec3") {
            assert!(drafts.is_null(), "{p}");
            continue;
        }
        assert_eq!((drafts["tokens"].as_u64(), drafts["assumed_acceptance"].as_f64()), (Some(3), Some(0.7)), "{p}");
        let measured = drafts["measured_acceptance"].as_f64().unwrap_or_else(|| panic!("{drafts}"));
        assert!(measured > 0.3 && measured <= 1.0, "{drafts}");
        assert!(drafts["measured_accepted_length"].as_f64().is_some_and(|l| l > 1.0 && l <= 4.0), "{drafts}");
    }
    assert!(both["pairs"].as_array().unwrap().iter().any(|p| p["drafts"].is_object()), "{both}");
}

/// A trace of `n` requests, one every `gap` seconds: goodput's JSONL.
fn even_trace(path: &Path, n: usize, gap: f64) {
    let lines: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"timestamp": {:.3}, "input_tokens": 96, "output_tokens": 8}}"#, i as f64 * gap))
        .collect();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// A plan that replayed a trace writes a grid whose sweep replays the same
/// trace at the speeds of the plan's points: each measured point offers the
/// rate its predicted partner did, and pairs with it load for load.
#[test]
fn a_trace_plan_s_grid_replays_the_trace_at_its_points() {
    let dir = tempfile::tempdir().unwrap();
    let (plan, grid, trace) = (dir.path().join("plan.json"), dir.path().join("grid.toml"), dir.path().join("t.jsonl"));
    // 16 requests over 1.5 s: 10.67 req/s at speed 1 (15 gaps of 0.1 s).
    even_trace(&trace, 16, 0.1);
    let args = ["--serve-engine", "goodput", "--precision", "fp8", "--max-num-batched-tokens", "2048"];
    let replay = ["--trace", trace.to_str().unwrap(), "--trace-speed", "1,4"];
    let text = plan_grid_of("llama-3.1-8b", "1", &[&args[..], &replay].concat(), &plan, &grid);
    assert!(text.contains("# The plan replayed a trace: the sweep replays it at the speeds of its points."), "{text}");
    let sweep = header_sweep(&text);
    assert!(sweep.contains("--trace-speed '1,4' ") && !sweep.contains("--concurrency"), "{sweep}");
    let words = shlex::split(sweep).unwrap();
    let o = goodput().arg("sweep").args(&words).args(["--progress", "none"]).current_dir(dir.path()).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rates = |doc: &Value| -> Vec<f64> {
        configs(doc)
            .iter()
            .flat_map(|c| c["points"].as_array().unwrap().iter().map(|p| p["load"]["value"].as_f64().unwrap()))
            .collect()
    };
    let measured = read_json(&dir.path().join("grid.measured.json"));
    let offered = rates(&measured);
    assert_eq!(offered.len(), 2, "{measured}");
    for (got, want) in offered.iter().zip([16.0 / 1.5, 4.0 * 16.0 / 1.5]) {
        assert!((got - want).abs() < 1e-6 * want, "{got} against {want}");
    }
    for c in configs(&measured) {
        for p in c["points"].as_array().unwrap() {
            assert_eq!((p["completed"].as_u64(), p["failed"].as_u64()), (Some(16), Some(0)), "{p}");
        }
    }
    // The plan's points are at the same rates: compare pairs them load for load.
    let planned = read_json(&plan);
    let best = &configs(&planned)[planned["best"]["at"]["config"].as_u64().unwrap() as usize];
    let at: Vec<f64> =
        best["points"].as_array().unwrap().iter().map(|p| p["load"]["value"].as_f64().unwrap()).collect();
    for (m, p) in offered.iter().zip(&at) {
        assert!((m - p).abs() < 1e-9 * p, "{m} against the plan's {p}");
    }
    let both = dir.path().join("both.json");
    let o =
        goodput().arg("compare").arg(&plan).arg(dir.path().join("grid.measured.json")).arg("-o").arg(&both).output();
    assert!(o.unwrap().status.success());
    let c = read_json(&both);
    let (_, pairs) = compared(&c);
    assert_eq!(pairs.len(), 1, "{c}");
    // Read at the plan's own points, not between them.
    let points = c["pairs"][0]["points"].as_array().unwrap_or_else(|| panic!("{c}"));
    assert_eq!(points.len(), 2, "{c}");
    assert!(points.iter().all(|p| p["interpolated"] == false), "{c}");
}
