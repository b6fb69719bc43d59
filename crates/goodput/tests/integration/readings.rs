//! What the reports say, read as a user reads them: a count headed by what
//! it counts, a pass that cannot be trusted said so, an infinite figure
//! shown as one, a peak only where there is one, units on every column.

use crate::cmd::{goodput, read_json, serve, FAST};

/// Beside a limit, a percentile objective is judged by its percentile: the
/// attainment row counts the limit (every request met it: pass), the
/// objective's row fails, and goodput, which counts every threshold (none
/// met the TTFT objective's 1 ms), is named so. The attainment had counted
/// every threshold against the 90% target, so a `ttft:p50` objective beside
/// a limit was judged as a p90 (and before that, headed by the limit alone,
/// `tpot<=50ms  0 of 8 good  FAIL` read as if the limit had failed).
#[test]
fn the_attainment_row_counts_the_limits_and_goodput_every_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let (md, html) = (dir.path().join("slo.md"), dir.path().join("slo.html"));
    let o = goodput()
        .args([
            "bench",
            "-n",
            "8",
            "-c",
            "2",
            "--progress",
            "none",
            "--slo",
            "ttft:p99<=1ms,tpot<=50ms",
            "--fail-on-slo",
        ])
        .args(FAST)
        .arg("--markdown")
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    let row = |line: &str| stdout.lines().find(|l| l.trim_start().starts_with(line)).unwrap_or_default().to_string();
    // The limit's row counts the limit alone (every request meets 50 ms
    // where its TPOT could be measured: on a busy machine a request whose
    // chunks came in one read has none, and does not meet it).
    let limit = row("tpot<=50ms ");
    assert!(limit.contains(" of 8 good (") && limit.contains("target 90.0%)"), "{stdout}");
    assert!(!stdout.contains("every threshold ("), "{stdout}");
    assert!(row("ttft:p99<=1ms ").ends_with("FAIL"), "{stdout}");
    assert!(stdout.contains("met every threshold 0.0%"), "{stdout}");
    assert!(stderr.contains("ttft:p99<=1ms measured"), "{stderr}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("Requests meeting tpot&lt;=50ms: ") && md.contains("met every threshold 0.00% (0 of 8 good)"),
        "{md}"
    );
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains("tpot&lt;=50ms · ") && html.contains(" of 8 requests good ("), "{html}");
}

/// A p99 objective met on 5 requests passes as before (the exit stays 0),
/// but not silently: 5 requests cannot bound a p99 (its interval is `[x, —]`),
/// and the verdict, the Markdown, the HTML and the warnings say so.
#[test]
fn a_percentile_objective_passed_on_too_few_requests_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (out, md, html) = (dir.path().join("run.json"), dir.path().join("run.md"), dir.path().join("run.html"));
    let o = goodput()
        .args(["bench", "-n", "5", "-c", "1", "--progress", "none", "--slo", "ttft:p99<=10s", "--fail-on-slo"])
        .args(FAST)
        .arg("-o")
        .arg(&out)
        .arg("--markdown")
        .arg(&md)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    let why = "5 requests cannot bound a p99 at 95% confidence: give 368 or more";
    // The terminal wraps its lines: read as words.
    let words = stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains(&format!("pass, but {why}")), "{stdout}");
    let v = read_json(&out);
    assert_eq!(v["slo"]["pass"], true);
    let warned = v["warnings"].as_array().unwrap().iter().any(|w| w.as_str().is_some_and(|w| w.contains(why)));
    assert!(warned, "{}", v["warnings"]);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains(&format!("✅ pass, but {why} |")), "{md}");
    let html = std::fs::read_to_string(&html).unwrap();
    assert!(html.contains(&format!("pass, but {why}</td>")), "{html}");
    // A run that can bound it says nothing more.
    let o = goodput()
        .args(["bench", "-n", "10", "-c", "1", "--progress", "none", "--slo", "ttft:p50<=10s"])
        .args(FAST)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("pass\n") && !stdout.contains("cannot bound"), "{stdout}");
}

/// The error-adjusted percentiles that fall among the failures are ∞, as
/// the SLO line shows them (they had been `-`); the document keeps `null`.
#[test]
fn error_adjusted_percentiles_among_the_failures_read_as_infinite() {
    let (url, _, _server) = serve(&["--profile", "fixed", "--ttft", "200ms", "--itl", "1ms"]);
    let o = goodput()
        .args(["bench", "--url", &url, "--no-metrics", "-n", "3", "-c", "3", "--timeout", "20ms"])
        .args(["--output-tokens", "4", "--input-tokens", "8", "--progress", "none"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("error-adjusted  TTFT p50 ∞ · p99 ∞ ms"), "{stdout}");
}

/// A window shorter than a whole 1 s bucket has no peak over 1 s: it had
/// printed its mean rate as `peak … over 1 s`.
#[test]
fn a_window_under_a_second_has_no_peak_over_1_s() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("run.md");
    let o = goodput()
        .args(["bench", "-n", "3", "-c", "3", "--progress", "none"])
        .args(FAST)
        .arg("--markdown")
        .arg(&md)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("(no whole 1 s in the window)") && !stdout.contains("over 1 s)"), "{stdout}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("(no whole 1 s in the window) |"), "{md}");
}

/// The sweep table's latency columns carry their unit.
#[test]
fn the_sweep_table_names_its_latency_unit() {
    let o = goodput().args(["sweep", "--concurrency", "1", "-n", "2"]).args(FAST).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("TTFT p50 (ms)") && stdout.contains("TPOT p99 (ms)"), "{stdout}");
}

/// A rate in per cent changes by percentage points (from 0% it had been
/// `+∞%`).
#[test]
fn compare_shows_a_rate_s_change_in_points() {
    let (ok_url, _, _ok) = serve(&["--profile", "fixed", "--ttft", "5ms", "--itl", "1ms"]);
    let (bad_url, _, _bad) =
        serve(&["--profile", "fixed", "--ttft", "5ms", "--itl", "1ms", "--fault-error-rate", "0.5"]);
    let dir = tempfile::tempdir().unwrap();
    let run = |url: &str, name: &str| {
        let out = dir.path().join(name);
        let _ = goodput()
            .args(["bench", "-q", "--url", url, "--no-metrics", "-n", "12", "-c", "4"])
            .args(["--output-tokens", "4", "--input-tokens", "8", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(out.exists());
        out
    };
    let (a, b) = (run(&ok_url, "a.json"), run(&bad_url, "b.json"));
    let o = goodput().arg("compare").arg(&a).arg(&b).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let row = text.lines().find(|l| l.starts_with("error rate")).unwrap_or_else(|| panic!("{text}"));
    // Half the requests fail on the second server: 12 all succeeding is 1 in 4096.
    assert!(row.contains(" pp") && row.contains('+') && !row.contains("∞"), "{row}");
}

/// The user view's ratings are over the successes, and say so where some
/// failed (a run with half its requests failed had read "excellent" with no
/// word of them); a quality limit no answer was scored by reads as the
/// failure it is, in the terminal and the Markdown. (Its dataset has no
/// references: a run with no dataset at all is refused the term, by
/// `report` as by `bench`.)
#[test]
fn ratings_name_the_failures_and_an_unscored_quality_limit_reads_as_failed() {
    let (url, _, _server) =
        serve(&["--profile", "fixed", "--ttft", "5ms", "--itl", "1ms", "--fault-error-rate", "0.5"]);
    let dir = tempfile::tempdir().unwrap();
    let (out, md) = (dir.path().join("run.json"), dir.path().join("again.md"));
    let data = dir.path().join("prompts.jsonl");
    let lines: Vec<String> = (0..16).map(|i| format!("{{\"prompt\": \"question {i}\"}}")).collect();
    std::fs::write(&data, lines.join("\n") + "\n").unwrap();
    let o = goodput()
        .args([
            "bench",
            "--url",
            &url,
            "--no-metrics",
            "-n",
            "16",
            "-c",
            "4",
            "--progress",
            "none",
            "--include-requests",
        ])
        .args(["--output-tokens", "4", "--dataset"])
        .arg(&data)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let run = read_json(&out);
    let q = &run["summary"]["requests"];
    // Half fail: 16 all succeeding is 1 in 65,536.
    let said = format!(
        "rated over the {} requests that succeeded; {} of 16 failed",
        q["completed"].as_u64().unwrap(),
        q["failed"].as_u64().unwrap()
    );
    assert!(stdout.contains(&said), "{stdout}");
    let o = goodput().arg("report").arg(&out).args(["--slo", "rouge_l>=0.5", "--markdown"]).arg(&md).output().unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("SLO rouge_l>=0.5: FAIL"), "{stdout}");
    let row = stdout.lines().find(|l| l.contains("no answer scored by it")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.trim_start().starts_with("rouge_l>=0.5 ") && row.ends_with("FAIL"), "{row}");
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains(r"| rouge\_l&gt;=0.5 | no answer scored by it |"), "{md}");
    assert!(md.contains(&said), "{md}");
}

/// A dataset's prompts answered with no usage, and no `--tokenizer`: their
/// input tokens are unknown, marked so (`unknown`, not `intended`) and
/// warned of with the fix. They had read "0 in", as if measured.
#[test]
fn a_dataset_prompt_without_usage_or_tokenizer_has_unknown_input_tokens() {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            crate::cmd::read_request(&mut BufReader::new(sock.try_clone().unwrap()));
            let chunk = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi \"}}]}\n\n";
            let body = format!("{}data: [DONE]\n\n", chunk.repeat(5));
            let _ = write!(
                sock,
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("ds.jsonl");
    let prompt = serde_json::json!({ "prompt": "word ".repeat(1000) }).to_string();
    std::fs::write(&dataset, format!("{prompt}\n{prompt}\n")).unwrap();
    let (out, records) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let o = goodput()
        .args(["bench", "--url", &url, "--model", "m", "--no-metrics", "-n", "2", "-c", "1", "--dataset"])
        .arg(&dataset)
        .arg("-o")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("input tokens are unknown") && err.contains("pass --tokenizer"), "{err}");
    for r in crate::cmd::records(&records) {
        assert_eq!(r.input_tokens_source, goodput_core::CountSource::Unknown, "{r:?}");
    }
    let v = read_json(&out);
    assert_eq!(v["summary"]["tokens"]["input_sources"]["unknown"], 2, "{}", v["summary"]["tokens"]);
    // The run's own warnings say the input totals are short, and why.
    let warned = v["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str());
    assert_eq!(warned.filter(|w| w.starts_with("2 of 2 completed requests' prompts have no token count")).count(), 1);
}

/// Streams that each send one line without end are bounded all together,
/// not only each by `--max-buffer`: past the process's budget (here set
/// to 1 MiB by `GOODPUT_BUFFER_BUDGET`, by default an eighth of the memory
/// available, and never under `--max-buffer`, 1 MiB here too) the stream
/// that passes it fails, saying so and naming the fix, before any stream
/// reaches its own cap. Each stream had held up to `--max-buffer`, so
/// memory grew with -c.
#[test]
fn endless_lines_over_many_streams_fail_at_the_process_budget() {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            std::thread::spawn(move || {
                crate::cmd::read_request(&mut BufReader::new(sock.try_clone().unwrap()));
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: ";
                let block = vec![b'a'; 16 << 10];
                // Until the client gives up on the stream and closes it.
                let mut ok = sock.write_all(head.as_bytes()).is_ok();
                while ok {
                    ok = sock.write_all(&block).is_ok();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        }
    });
    let o = goodput()
        .env("GOODPUT_BUFFER_BUDGET", (1 << 20).to_string())
        .args(["bench", "--url", &url, "--model", "m", "--no-metrics", "-n", "4", "-c", "4", "--timeout", "60s"])
        .args(["--max-buffer", "1MiB"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("more than the process's budget of 1048576 bytes") && err.contains("a lower --max-buffer or -c"),
        "{err}"
    );
}

/// Whole bodies (`--no-stream`) count in the same budget as the streams'
/// unended lines: bodies that never end fail once all of them together
/// pass it, before any reaches its own `--max-buffer` cap. Each had held
/// up to `--max-buffer` (64 MiB by default), so memory grew with -c.
#[test]
fn endless_bodies_over_many_requests_fail_at_the_process_budget() {
    use std::io::{BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(mut sock) = sock else { return };
            std::thread::spawn(move || {
                crate::cmd::read_request(&mut BufReader::new(sock.try_clone().unwrap()));
                let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n{\"id\": \"";
                let block = vec![b'a'; 16 << 10];
                // Until the client gives up on the body and closes it.
                let mut ok = sock.write_all(head.as_bytes()).is_ok();
                while ok {
                    ok = sock.write_all(&block).is_ok();
                    std::thread::sleep(std::time::Duration::from_millis(2));
                }
            });
        }
    });
    let o = goodput()
        .env("GOODPUT_BUFFER_BUDGET", (1 << 20).to_string())
        .args(["bench", "--url", &url, "--model", "m", "--no-metrics", "-n", "4", "-c", "4", "--timeout", "60s"])
        .args(["--no-stream", "--max-buffer", "1MiB"])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("more than the process's budget of 1048576 bytes") && err.contains("a lower --max-buffer or -c"),
        "{err}"
    );
}
