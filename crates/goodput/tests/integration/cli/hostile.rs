//! Hostile servers met through the whole `goodput bench` (issue 29): what
//! reaches the terminal, and readiness probes against a server that closes
//! after each response.

use crate::cmd::{goodput, read_json, records, GoodputCommand};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// A response: status line and headers (without the length), and body.
type Reply = (&'static str, String);

/// A server on 127.0.0.1:0 answering each request (its request line, and
/// how many requests of that path came before) with `answer`'s reply,
/// framed by Content-Length and never saying `Connection: close`. With
/// `close_after_each`, it closes the connection after each response, once
/// the next request has come or 100 ms on, as llama.cpp does (so a client
/// that reuses the connection meets the race every time).
fn server(answer: fn(&str, usize) -> Reply, close_after_each: bool) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>> = Arc::default();
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _ = connection(sock, answer, close_after_each, &seen);
            });
        }
    });
    url
}

/// The next request on a connection, read whole: its request line, its
/// body read past (`Content-Length`); `None` where the client closed.
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<String>> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line)? == 0 {
        return Ok(None);
    }
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                len = value.trim().parse().unwrap_or(0);
            }
        }
    }
    reader.read_exact(&mut vec![0; len])?;
    Ok(Some(request_line))
}

fn connection(
    mut sock: TcpStream,
    answer: fn(&str, usize) -> Reply,
    close_after_each: bool,
    seen: &std::sync::Mutex<std::collections::HashMap<String, usize>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock.try_clone()?);
    loop {
        let Some(request_line) = read_request(&mut reader)? else { return Ok(()) };
        let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
        let n = {
            let mut seen = seen.lock().unwrap();
            let n = seen.entry(path).or_default();
            *n += 1;
            *n - 1
        };
        let (head, body) = answer(request_line.trim_end(), n);
        write!(sock, "{head}\r\ncontent-length: {}\r\n\r\n{body}", body.len())?;
        if close_after_each {
            sock.set_read_timeout(Some(Duration::from_millis(100)))?;
            let _ = sock.peek(&mut [0u8; 1]);
            let _ = sock.shutdown(std::net::Shutdown::Both);
            return Ok(());
        }
    }
}

const SSE: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream";
const JSON: &str = "HTTP/1.1 200 OK\r\ncontent-type: application/json";

/// `--wait-ready` against a server that closes after each response without
/// saying so (issue 29, defect 13): its probes never depend on a kept
/// connection, so the run goes on as it does without `--wait-ready` (it
/// failed with "connection closed before message completed").
#[test]
fn wait_ready_works_against_a_server_that_closes_after_each_response() {
    let url = server(
        |line, n| {
            if line.starts_with("GET /health") {
                // Starting: two "not yet" first.
                return if n < 2 {
                    ("HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain", "loading".into())
                } else {
                    (JSON, "{}".into())
                };
            }
            if line.starts_with("GET /v1/models") {
                return (JSON, r#"{"object":"list","data":[{"id":"m1","object":"model"}]}"#.into());
            }
            let a = r#"data: {"choices":[{"delta":{"content":"a"},"finish_reason":"stop"}]}"#;
            (SSE, format!("{a}\n\ndata: [DONE]\n\n"))
        },
        true,
    );
    for transport in ["auto", "reqwest"] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run.json");
        let o = goodput()
            .args(["bench", "-q", "--url", &url, "--wait-ready", "10s", "-n", "3", "-c", "1"])
            .args(["--output-tokens", "4", "--no-metrics", "--transport", transport])
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{transport}: {err}");
        let v = read_json(&out);
        assert_eq!(v["config"]["client"]["model"], "m1", "{transport}");
        // goodput's own client sends again a request whose kept connection
        // the server closed; reqwest fails it (hostile-servers.md), but the
        // first, on a fresh connection, completes.
        let completed = v["summary"]["requests"]["completed"].as_u64().unwrap();
        let least = if transport == "auto" { 3 } else { 1 };
        assert!(completed >= least, "{transport}: {completed} completed: {err}");
    }
}

/// A server whose model name and mid-stream error hold escape sequences (a
/// screen clear, a window title, colours, a carriage return that forges a
/// line) (issue 29, defect 3): stdout and stderr show them as text, never
/// as the bytes; the records keep the server's text as it was.
#[test]
fn a_servers_escape_sequences_never_reach_the_terminal() {
    let url = server(
        |line, _| {
            if line.starts_with("GET /v1/models") {
                let id = "m\u{1b}]0;model-title\u{7}\u{1b}[2J";
                return (JSON, serde_json::json!({"data": [{"id": id}]}).to_string());
            }
            let a = r#"data: {"choices":[{"delta":{"content":"a"}}]}"#;
            let evil = "\u{1b}[2J\u{1b}]0;pwned\u{7}\u{1b}[31mred\rforged: all requests succeeded";
            let e = serde_json::json!({"error": {"message": evil}});
            (SSE, format!("{a}\n\ndata: {e}\n\n"))
        },
        false,
    );
    for transport in ["auto", "reqwest"] {
        let dir = tempfile::tempdir().unwrap();
        let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
        let o = goodput()
            .args(["bench", "--url", &url, "-n", "2", "-c", "1", "--output-tokens", "4", "--no-metrics"])
            .args(["--transport", transport, "--progress", "plain"])
            .writing(&out, &rec)
            .output()
            .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(1), "{transport}: no request succeeded: {stderr}");
        assert!(stderr.contains("first failure: mid_stream_error"), "{transport}: {stderr}");
        assert!(stderr.contains("\\u{1b}[2J") && stderr.contains("\\u{d}forged"), "{transport}: {stderr}");
        for (name, text) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
            for byte in [0x1b, 0x07, b'\r'] {
                assert!(!text.contains(&byte), "{transport}: {name} holds {byte:#x}:\n{stdout}\n{stderr}");
            }
        }
        let kept = records(&rec);
        let message = match &kept[0].outcome {
            goodput_core::Outcome::Failed { message, .. } => message.clone(),
            o => panic!("{o:?}"),
        };
        assert!(message.contains("\u{1b}[2J") && message.contains('\r'), "the record keeps the text: {message:?}");
    }
}

/// Hints that fix the problem (issue 36): a `--url` naming an endpoint is
/// refused with the root to give; a wrong `--api` is named by the model
/// list that does answer; `https://` to a plain-HTTP port says to use
/// `http://`.
#[test]
fn hints_name_the_fix() {
    let err = goodput().args(["bench", "--url", "http://127.0.0.1:9/v1/chat/completions", "-n", "1"]).refusal();
    assert!(err.contains("--url is the server's root") && err.contains("give --url http://127.0.0.1:9\n"), "{err}");
    let err =
        goodput().args(["bench", "--url", "http://127.0.0.1:9/api/generate?key=s3cr3t-value", "-n", "1"]).refusal();
    assert!(err.contains("give --url http://127.0.0.1:9") && !err.contains("s3cr3t"), "{err}");
    // A fragment is refused with the path as given (`/v1/` had been dropped
    // from the echo) and the fragment masked.
    let err = goodput().args(["bench", "--url", "http://127.0.0.1:9/v1/#k=s3cr3t", "-n", "1"]).refusal();
    assert!(
        err.contains("'http://127.0.0.1:9/v1/#***'") && err.contains("fragment") && !err.contains("s3cr3t"),
        "{err}"
    );
    let err = goodput().args(["monitor", "http://127.0.0.1:9/v1/#k=s3cr3t", "--duration", "1s"]).refusal();
    assert!(err.contains("'http://127.0.0.1:9/v1/#***'") && !err.contains("s3cr3t"), "{err}");

    // An OpenAI server loaded as Ollama: /api/tags is not there, /v1/models is.
    let url = server(
        |line, _| {
            if line.starts_with("GET /v1/models") {
                (JSON, r#"{"object":"list","data":[{"id":"m"}]}"#.into())
            } else {
                ("HTTP/1.1 404 Not Found\r\ncontent-type: text/plain", "no".into())
            }
        },
        false,
    );
    let err = goodput().args(["bench", "--url", &url, "--api", "ollama-chat", "-n", "1"]).refusal();
    assert!(
        err.contains("/v1/models answers: this looks like an OpenAI-compatible server") && err.contains("--api chat"),
        "{err}"
    );

    // TLS to a plain-HTTP server (it answers the handshake with a 400), with
    // and without a model to ask for.
    let (_rt, plain) = crate::cmd::fixed_server(goodput_sim::fixed::FixedProfile::default());
    let https = plain.replace("http://", "https://");
    let err = goodput().args(["bench", "--url", &https, "-n", "1"]).refusal();
    assert!(err.contains("use http://, not https://"), "{err}");
    let err = goodput().args(["bench", "--url", &https, "--model", "m", "-n", "1", "--progress", "none"]).refusal();
    assert!(err.contains("use http://, not https://"), "{err}");
}

/// A server on 127.0.0.1:0 for streams beside a flood: its first chat
/// request is answered with one token and then choice-less events
/// (`data: {}`), as fast as the client takes them, for `flood` (until the
/// client goes, when `None`); every other with five tokens 50 ms apart
/// after 100 ms, then usage. Each response closes its connection.
fn flooding_server(flood: Option<Duration>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let posts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { return };
            let posts = posts.clone();
            std::thread::spawn(move || {
                let _ = flood_or_stream(sock, &posts, flood);
            });
        }
    });
    url
}

fn flood_or_stream(
    mut sock: TcpStream,
    posts: &std::sync::atomic::AtomicUsize,
    flood: Option<Duration>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock.try_clone()?);
    let Some(request_line) = read_request(&mut reader)? else { return Ok(()) };
    sock.set_nodelay(true)?;
    if request_line.starts_with("GET ") {
        let body = r#"{"object":"list","data":[{"id":"m1","object":"model"}]}"#;
        return write!(sock, "{JSON}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}", body.len());
    }
    write!(sock, "{SSE}\r\nconnection: close\r\n\r\n")?;
    let token = |t: &str| format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{t}\"}}}}]}}\n\n");
    if posts.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
        sock.write_all(token("x").as_bytes())?;
        let blob = "data: {}\n\n".repeat(100_000);
        let start = std::time::Instant::now();
        while flood.is_none_or(|f| start.elapsed() < f) {
            sock.write_all(blob.as_bytes())?;
        }
    } else {
        std::thread::sleep(Duration::from_millis(100));
        for i in 0..5 {
            sock.write_all(token(&format!("w{i} ")).as_bytes())?;
            std::thread::sleep(Duration::from_millis(50));
        }
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}"#;
        write!(sock, "data: {usage}\n\n")?;
    }
    sock.write_all(b"data: [DONE]\n\n")
}

/// One stream whose bytes come faster than goodput parses them (a flood of
/// choice-less events, 4 s) beside normal ones, two at a time, started
/// while it lasts, all read by one stream reader thread: the others are
/// read in turn, their TTFT near its true
/// 100 ms and their five tokens apart (the flood had held the thread, and
/// every other stream's chunks were stamped at one instant, seconds late).
#[test]
fn a_flooding_stream_leaves_the_other_streams_timings_alone() {
    let url = flooding_server(Some(Duration::from_secs(4)));
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let o = goodput()
        .env("GOODPUT_STREAM_THREADS", "1")
        .args(["bench", "-q", "--url", &url, "--model", "m1", "-n", "8", "-c", "3", "--output-tokens", "5"])
        .args(["--no-metrics"])
        .writing(&out, &rec)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    use goodput_core::RequestMetrics;
    let kept = records(&rec);
    assert_eq!(kept.len(), 8, "{err}");
    let (flood, normal): (Vec<_>, Vec<_>) = kept.iter().partition(|r| r.chunks.len() < 5);
    assert_eq!((flood.len(), normal.len()), (1, 7), "{err}");
    assert!(flood[0].end - flood[0].sent >= Duration::from_secs(3), "the flood lasted: {:?}", flood[0]);
    for r in normal {
        let (ttft, e2e) = (r.ttft().unwrap(), r.e2e().unwrap());
        assert!(r.outcome.is_success(), "{:?}", r.outcome);
        assert!(ttft >= Duration::from_millis(50) && ttft < Duration::from_secs(1), "TTFT {ttft:?}: {err}");
        // The last chunk is sent 100 ms and four 50 ms gaps after the
        // request (causal: no stamp precedes its sending), and read long
        // before the flood's 4 s end (it had held every other stream's
        // chunks to it). How far apart the first and last were read varies
        // with a busy machine's scheduling of the one reader thread (101 ms
        // once, with both cores kept busy): not asserted.
        assert!(e2e >= Duration::from_millis(300), "TTFT {ttft:?}, E2E {e2e:?}");
        assert!(e2e < Duration::from_millis(1500), "E2E {e2e:?}");
    }
}

/// An endless flood with `--timeout 2s`: the request ends as a timeout
/// soon after 2 s, whether a reader thread or the request's task reads it
/// (it had run on for 7-28 s, the task waiting on the thread's lock).
#[test]
fn a_flooding_stream_times_out_on_time() {
    for threads in ["1", "0"] {
        let url = flooding_server(None);
        let dir = tempfile::tempdir().unwrap();
        let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
        let started = std::time::Instant::now();
        let o = goodput()
            .env("GOODPUT_STREAM_THREADS", threads)
            .args(["bench", "-q", "--url", &url, "--model", "m1", "-n", "1", "-c", "1", "--output-tokens", "5"])
            .args(["--no-metrics", "--timeout", "2s"])
            .writing(&out, &rec)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(took < Duration::from_secs(8), "threads {threads}: the run took {took:?}: {err}");
        let kept = records(&rec);
        assert_eq!(kept.len(), 1, "threads {threads}: {err}");
        let r = &kept[0];
        match &r.outcome {
            goodput_core::Outcome::Failed { kind, .. } => {
                assert_eq!(*kind, goodput_core::FailureKind::Timeout, "threads {threads}: {:?}", r.outcome)
            }
            o => panic!("threads {threads}: {o:?}"),
        }
        let lasted = r.end - r.sent;
        assert!(lasted >= Duration::from_secs(2) && lasted < Duration::from_secs(6), "threads {threads}: {lasted:?}");
    }
}

/// SIGTERM during an endless flood (no --timeout of its own): the run ends
/// within its --grace and a little, the request cancelled (the signal had
/// been ignored for 30-100 s).
#[test]
fn a_flooding_stream_ends_at_sigterm_and_its_grace() {
    let url = flooding_server(None);
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("run.json"), dir.path().join("rec.jsonl"));
    let mut child = crate::cmd::Kill(
        crate::cmd::goodput_child()
            .env("GOODPUT_STREAM_THREADS", "1")
            .args(["bench", "-q", "--url", &url, "--model", "m1", "-n", "1", "-c", "1", "--output-tokens", "5"])
            .args(["--no-metrics", "--grace", "1s", "-o"])
            .arg(&out)
            .arg("--records")
            .arg(&rec)
            .spawn()
            .unwrap(),
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert!(child.0.try_wait().unwrap().is_none(), "the flood goes on");
    // SAFETY: signals our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGTERM) };
    let t0 = std::time::Instant::now();
    let mut status = None;
    while t0.elapsed() < Duration::from_secs(15) {
        status = child.0.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = t0.elapsed();
    assert!(status.is_some() && took < Duration::from_secs(5), "ended {took:?} after SIGTERM (grace 1 s)");
}

/// `--extra-body '{"n":2}'` on an OpenAI route is refused before any
/// request, naming the fix (the answers' chunks, interleaved in one stream,
/// had been merged as one answer's, halving ITL and TPOT); `"n": 1` runs.
#[test]
fn several_answers_a_request_are_refused() {
    for api in ["chat", "completions"] {
        let err = goodput()
            .args(["bench", "--url", "http://127.0.0.1:9", "--model", "m", "-n", "1", "--api", api])
            .args(["--extra-body", r#"{"n":2,"temperature":1}"#])
            .refusal();
        assert!(err.contains(r#"asks for "n": 2 answers a request"#) && err.contains(r#"Drop "n""#), "{api}: {err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    goodput()
        .args(["bench", "-q", "-n", "1", "--no-metrics", "--extra-body", r#"{"n":1}"#])
        .args(crate::cmd::FAST)
        .arg("-o")
        .arg(&out)
        .assert()
        .success();
}

/// A model list's 401 says the key was refused, with the server's words
/// and the flags that send it (it had said "pass --model NAME"); with no
/// key given, that one is asked for.
#[test]
fn a_refused_key_is_named_as_such() {
    let url = server(
        |_, _| {
            (
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json",
                r#"{"error":{"message":"Invalid API key given","type":"auth"}}"#.into(),
            )
        },
        false,
    );
    let err = goodput().args(["bench", "--url", &url, "-n", "1", "--api-key", "sk-s3cr3t"]).refusal();
    assert!(
        err.contains("refused the API key") && err.contains("Invalid API key given") && err.contains("--api-key"),
        "{err}"
    );
    assert!(err.contains("--key-header") && !err.contains("pass --model") && !err.contains("s3cr3t"), "{err}");
    let err = goodput().args(["bench", "--url", &url, "-n", "1"]).refusal();
    assert!(err.contains("asks for an API key") && err.contains("pass --api-key"), "{err}");
}

/// With `--model` given the model list is never asked for, so the checks
/// before a run, which name the fix, do not run: a run whose every request
/// is answered 401 or 403 now says what to pass (never the key), and one
/// answered 404 by a server whose `/v1` is not there (Ollama without its
/// OpenAI routes: "404 page not found") names the API whose list answers.
#[test]
fn a_run_whose_every_request_fails_names_the_fix() {
    let refused = server(
        |_, _| {
            (
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json",
                r#"{"error":{"message":"Invalid API key given","type":"auth"}}"#.into(),
            )
        },
        false,
    );
    let run = |url: &str, extra: &[&str]| {
        let o = goodput()
            .args(["bench", "-q", "--url", url, "--model", "m", "-n", "2", "--output-tokens", "2", "--no-metrics"])
            .args(extra)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let err = run(&refused, &["--api-key", "sk-s3cr3t"]);
    assert!(err.contains("hint: every request was answered HTTP 401: the server refused the API key"), "{err}");
    assert!(err.contains("--api-key (or OPENAI_API_KEY)") && err.contains("--header"), "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    let err = run(&refused, &[]);
    assert!(err.contains("hint: every request was answered HTTP 401: the server asks for an API key"), "{err}");
    // A sweep whose points all fail says the same, once (it had said only
    // "no point completed a request").
    let o = goodput()
        .args(["sweep", "--url", &refused, "--model", "m", "--concurrency", "1,2", "-n", "2", "--output-tokens", "2"])
        .args(["--no-metrics", "--progress", "none", "--api-key", "sk-s3cr3t"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("first failure: http_status: HTTP 401 Unauthorized").count(), 1, "{err}");
    assert_eq!(err.matches("hint: every request was answered HTTP 401: the server refused").count(), 1, "{err}");
    assert!(!err.contains("s3cr3t"), "{err}");
    // One 401 among failures of another kind: no hint that every request
    // was answered 401.
    let mixed = server(
        |line, n| {
            if line.starts_with("POST") && n > 0 {
                ("HTTP/1.1 200 OK\r\ncontent-type: text/html", "<html>a proxy's page</html>".into())
            } else if line.starts_with("POST") {
                ("HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json", r#"{"error":{"message":"no"}}"#.into())
            } else {
                ("HTTP/1.1 404 Not Found\r\ncontent-type: text/plain", "nothing here".into())
            }
        },
        false,
    );
    let err = run(&mixed, &["-c", "1"]);
    assert!(err.contains("invalid_response") || err.contains("failed"), "{err}");
    assert!(!err.contains("every request was answered HTTP 401"), "{err}");

    let ollama = server(
        |line, _| {
            if line.starts_with("GET /api/tags") {
                (JSON, r#"{"models":[{"name":"m","model":"m"}]}"#.into())
            } else {
                ("HTTP/1.1 404 Not Found\r\ncontent-type: text/plain", "404 page not found".into())
            }
        },
        false,
    );
    let err = run(&ollama, &[]);
    assert!(err.contains("hint: the server answered 404 to every request (--api chat)"), "{err}");
    assert!(err.contains("this looks like an Ollama server: try --api ollama-chat"), "{err}");
}
