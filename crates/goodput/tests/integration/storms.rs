//! Servers that fail every request at once: a closed loop that resent at
//! once piled up failed records by the thousand a second (221,323 in 8 s,
//! half a gigabyte held). A refusal's `Retry-After` holds its user back, and
//! a failure storm stops the run early with its document written.

use crate::cmd::{goodput, read_json, records, GoodputCommand};
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::time::{Duration, Instant};

/// A listener on 127.0.0.1:0 that hands each connection to `serve` on a
/// thread of its own; its URL.
fn listen(serve: fn(std::net::TcpStream)) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            std::thread::spawn(move || serve(sock));
        }
    });
    url
}

#[test]
fn a_failure_storm_stops_a_timed_closed_loop_early_with_its_document_written() {
    // Every connection closed as soon as it is taken.
    let url = listen(drop::<std::net::TcpStream>);
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let began = Instant::now();
    let o = goodput()
        .args(["bench", "--url", &url, "--model", "m", "-c", "3", "--duration", "60s", "--no-metrics"])
        .args(["--progress", "none"])
        .writing(&out, &rec)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let took = began.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    // The storm needs its quiet stretch (or its flood of failures), then
    // the run ends: far from 60 s.
    assert!(took < Duration::from_secs(40), "the run went on for {took:?}: {stderr}");
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("failure storm") && stderr.contains("first failure: "), "{stderr}");
    let doc = read_json(&out);
    assert_eq!(doc["stop"]["reason"], "failure_storm", "{}", doc["stop"]);
    assert!(doc["stop"]["detail"].as_str().unwrap().contains("first failure"), "{}", doc["stop"]);
    assert_eq!(doc["interrupted"], false);
    let failed = doc["summary"]["requests"]["failed"].as_u64().unwrap();
    assert!(failed >= goodput_load::runner::STORM_FAILURES, "{failed} failed");
    assert_eq!(records(&rec).len() as u64, failed, "every record kept");
}

/// `bench --runs`: a storm in a run stops the series there, says so, and
/// fails the command (it had exited 0 for run 1's sake, and made the later
/// runs fail as fast).
#[test]
fn a_failure_storm_ends_a_series_of_runs_and_fails_it() {
    let url = listen(drop::<std::net::TcpStream>);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs.json");
    let o = goodput()
        .args(["bench", "--url", &url, "--model", "m", "-c", "3", "--duration", "60s", "--no-metrics"])
        .args(["--progress", "none", "--runs", "3", "-o", out.to_str().unwrap()])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("run 1 of 3 was stopped by a failure storm"), "{stderr}");
    let doc = read_json(&out);
    assert_eq!(doc["repeats"]["runs"].as_array().unwrap().len(), 1, "{}", doc["repeats"]);
}

/// Answers this many requests (a three-token stream each), then closes
/// every connection it takes.
static ANSWERED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn answers_three_then_drops(sock: std::net::TcpStream) {
    use std::sync::atomic::Ordering;
    let mut r = BufReader::new(sock.try_clone().unwrap());
    let mut sock = sock;
    if crate::cmd::read_request(&mut r).is_empty() || ANSWERED.fetch_add(1, Ordering::SeqCst) >= 3 {
        return;
    }
    answer_three_tokens(&mut sock);
}

/// Writes a three-token stream, and closes the connection.
fn answer_three_tokens(sock: &mut std::net::TcpStream) {
    let chunk = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n");
    let body = [chunk("a"), chunk("b"), chunk("c"), "data: [DONE]\n\n".into()].concat();
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let _ = sock.write_all(format!("{head}{body}").as_bytes());
}

/// `sweep`: a point a failure storm stopped fails the sweep (1), though it
/// completed requests first, and no load of as many users or more is run
/// after it (each would meet the same failing server, and take its seconds
/// to say so); fewer users still are (a storm at many users can be an
/// overloaded server's timeouts). What was not run is named on stderr and
/// in the document's notes. It had exited 0, every load past the server's
/// death "measured", and then gone on to run every one.
#[test]
fn a_failure_storm_in_a_sweep_fails_it_and_skips_the_loads_above_it() {
    let url = listen(answers_three_then_drops);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let o = goodput()
        .args(["sweep", "--url", &url, "--model", "m", "--concurrency", "2,1,4", "--duration", "60s"])
        .args(["--warmup", "0", "--no-metrics", "--progress", "none", "-o", out.to_str().unwrap()])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("not running concurrency 4: a failure storm stopped concurrency 1"), "{stderr}");
    assert!(
        stderr.contains("error: a failure storm stopped 2 of 2 points early (concurrency 2, concurrency 1)"),
        "{stderr}"
    );
    let doc = read_json(&out);
    let points = doc["points"].as_array().unwrap();
    let loads: Vec<u64> = points.iter().map(|p| p["load"]["value"].as_u64().unwrap()).collect();
    assert_eq!(loads, [2, 1], "{points:?}");
    assert_eq!(points[0]["result"]["summary"]["requests"]["completed"], 3, "{}", points[0]["result"]["summary"]);
    for p in points {
        assert_eq!(p["result"]["stop"]["reason"], "failure_storm", "{}", p["result"]["stop"]);
    }
    let notes = doc["analysis"]["notes"].to_string();
    assert!(
        notes.contains("a failure storm stopped concurrency 1 (every request failed for seconds), so the sweep did not run: concurrency 4"),
        "{notes}"
    );
}

/// When the server answering `answers_for_a_while` took its first request.
static FIRST_TAKEN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

/// Answers (a three-token stream, 50 ms late) for 14.5 s from the first
/// request it takes, then closes every connection it takes.
fn answers_for_a_while(sock: std::net::TcpStream) {
    let mut r = BufReader::new(sock.try_clone().unwrap());
    let mut sock = sock;
    if crate::cmd::read_request(&mut r).is_empty()
        || FIRST_TAKEN.get_or_init(Instant::now).elapsed() > Duration::from_millis(14_500)
    {
        return;
    }
    std::thread::sleep(Duration::from_millis(50));
    answer_three_tokens(&mut sock);
}

/// `sweep --runs 2`: a storm in a point's second run fails the sweep (1)
/// and is marked in the point's repeats block. The point's top level is
/// its first run, which measured, and the sweep had exited 0. The server
/// answers through the first run (14 s) and stops half a second after, so
/// the second run's quiet stretch starts within its first second.
#[test]
fn a_failure_storm_in_a_later_run_of_a_sweep_point_fails_the_sweep() {
    let url = listen(answers_for_a_while);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep.json");
    let o = goodput()
        .args(["sweep", "--url", &url, "--model", "m", "--concurrency", "1", "--runs", "2", "--duration", "14s"])
        .args(["--warmup", "0", "--no-metrics", "--progress", "none", "-o", out.to_str().unwrap()])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("a failure storm stopped run 2 of 2"), "{stderr}");
    assert!(stderr.contains("error: a failure storm stopped 1 of 1 point early (concurrency 1's run 2)"), "{stderr}");
    let doc = read_json(&out);
    let point = &doc["points"][0]["result"];
    assert!(point["stop"].is_null() || point["stop"]["reason"] != "failure_storm", "{}", point["stop"]);
    assert!(point["summary"]["requests"]["completed"].as_u64().unwrap() > 0);
    let runs = point["repeats"]["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(runs[0].get("stormed").is_none() && runs[1]["stormed"] == true, "{runs:?}");
}

#[test]
fn a_refusal_s_retry_after_holds_its_user_back() {
    // Every request refused at once with `Retry-After: 1`.
    let url = listen(|sock| refuse_with_retry_after(sock, "1"));
    let (recs, doc, stderr) = one_user_for(&url, "3500ms");
    let sent = sends(&recs);
    assert!(sent.len() >= 2, "{sent:?}: {stderr}");
    assert!(sent.windows(2).all(|w| w[1] - w[0] >= Duration::from_secs(1)), "{sent:?}");
    assert!(sent.len() <= 4, "a send a second at most: {sent:?}");
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("Retry-After") && warnings.contains("waited"), "{warnings}");
    assert!(!warnings.contains("neither"), "{warnings}");
}

/// A `Retry-After` date is read against the response's `Date`, the
/// server's clock: a server an hour behind this machine that asks for a
/// second holds its user back a second. Read against this machine's clock,
/// the date was an hour past, and nothing was waited.
#[test]
fn a_retry_after_date_is_read_against_the_server_s_clock() {
    let url = listen(|sock| {
        let behind = std::time::SystemTime::now() - Duration::from_secs(3600);
        let date = httpdate::fmt_http_date(behind);
        let after = httpdate::fmt_http_date(behind + Duration::from_secs(1));
        refuse_with_retry_after(sock, &format!("{after}\r\ndate: {date}"))
    });
    let (recs, doc, stderr) = one_user_for(&url, "2500ms");
    let sent = sends(&recs);
    assert!(!sent.is_empty() && sent.len() <= 3, "a send a second at most: {sent:?}: {stderr}");
    assert!(sent.windows(2).all(|w| w[1] - w[0] >= Duration::from_millis(900)), "{sent:?}");
    assert!(recs.iter().all(|r| r.retry_after_date.as_deref().is_some_and(|d| d.ends_with("GMT"))), "the Date kept");
    let warnings = doc["warnings"].to_string();
    assert!(!warnings.contains("neither"), "{warnings}");
}

/// A bench of one user against `url` for `duration`: its records, its
/// document and its stderr.
fn one_user_for(url: &str, duration: &str) -> (Vec<goodput_core::RequestRecord>, serde_json::Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let o = goodput()
        .args(["bench", "--url", url, "--model", "m", "-c", "1", "--duration", duration, "--no-metrics"])
        .args(["--progress", "none"])
        .writing(&out, &rec)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (records(&rec), read_json(&out), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The records' send times, in order.
fn sends(recs: &[goodput_core::RequestRecord]) -> Vec<Duration> {
    let mut sent: Vec<Duration> = recs.iter().map(|r| r.sent).collect();
    sent.sort();
    sent
}

/// A `Retry-After` that is neither seconds nor an HTTP date (`-5`) is not
/// waited, and the run says so, naming it: it had been passed over without
/// a word.
#[test]
fn an_unreadable_retry_after_is_told() {
    let url = listen(|sock| refuse_with_retry_after(sock, "-5"));
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let o = goodput()
        .args(["bench", "--url", &url, "--model", "m", "-c", "1", "-n", "3", "--no-metrics", "--progress", "none"])
        .writing(&out, &rec)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(records(&rec).len(), 3, "{stderr}");
    let warnings = read_json(&out)["warnings"].to_string();
    assert!(
        warnings.contains(
            "3 refusal(s) carried a Retry-After that is neither a number of seconds nor an HTTP date (the first: '-5')"
        ),
        "{warnings}"
    );
    assert!(!warnings.contains("waited as asked"), "{warnings}");
}

/// Refuses every request at once: 429 with `Retry-After: {value}`.
fn refuse_with_retry_after(sock: std::net::TcpStream, value: &str) {
    let mut r = BufReader::new(sock.try_clone().unwrap());
    let mut sock = sock;
    loop {
        if crate::cmd::read_request(&mut r).is_empty() {
            return;
        }
        let body = r#"{"error":{"message":"rate limit reached"}}"#;
        let head = format!("HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: {value}");
        if write!(sock, "{head}\r\ncontent-length: {}\r\n\r\n{body}", body.len()).is_err() {
            return;
        }
    }
}
