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

fn connection(
    mut sock: TcpStream,
    answer: fn(&str, usize) -> Reply,
    close_after_each: bool,
    seen: &std::sync::Mutex<std::collections::HashMap<String, usize>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock.try_clone()?);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
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
        let mut body = vec![0; len];
        reader.read_exact(&mut body)?;
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
