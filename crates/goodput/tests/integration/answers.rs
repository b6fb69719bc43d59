//! What a server's odd answers do to a whole `goodput bench`, over real
//! loopback HTTP: a /metrics that never answers delays the start and bunches
//! no request; a key echoed JSON-escaped is masked in everything written;
//! streamed requests answered with one JSON body are warned of and fail a
//! TPOT SLO; a model list's name past any real one is refused.

use crate::cmd::{goodput, read_json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How the server answers.
#[derive(Clone, Copy)]
enum Mode {
    /// A stream of three chunks 5 ms apart with a usage of 3; a /metrics
    /// that never answers (until the server stops).
    SilentMetrics,
    /// 401 with the Authorization's key in a FastAPI `detail`, `/`
    /// written `\/` as PHP's json_encode writes it.
    EchoPhp,
    /// One JSON body of three tokens, whatever the request asked.
    Whole,
    /// A model list whose one name is 4 KiB long.
    LongModelName,
}

/// `goodput bench -q` against `server` as model `m`, with `args`, writing
/// its result to `out`.
fn bench(server: &Server, args: &[&str], out: &std::path::Path) -> std::process::Output {
    goodput()
        .args(["bench", "-q", "--url", &server.url, "--model", "m"])
        .args(args)
        .arg("-o")
        .arg(out)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap()
}

/// A server on 127.0.0.1:0 answering as `mode` says, one request a
/// connection; stopped, and its threads joined, when dropped.
struct Server {
    url: String,
    /// How many requests for /metrics it was sent.
    scrapes: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(mode: Mode) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let scrapes = Arc::new(AtomicUsize::new(0));
        let counted = scrapes.clone();
        let thread = std::thread::spawn(move || {
            let mut connections = Vec::new();
            for sock in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(sock) = sock else { continue };
                let (stopped, counted) = (stopped.clone(), counted.clone());
                connections.push(std::thread::spawn(move || {
                    let _ = answer(sock, mode, &stopped, &counted);
                }));
            }
            for c in connections {
                let _ = c.join();
            }
        });
        Server { url, scrapes, stop, thread: Some(thread) }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then ends.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answer(mut sock: TcpStream, mode: Mode, stop: &AtomicBool, scrapes: &AtomicUsize) -> std::io::Result<()> {
    let mut reader = BufReader::new(sock.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let (mut len, mut auth) = (0usize, String::new());
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.trim_end().split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => len = value.trim().parse().unwrap_or(0),
                "authorization" => auth = value.trim().trim_start_matches("Bearer ").to_owned(),
                _ => {}
            }
        }
    }
    reader.read_exact(&mut vec![0; len])?;
    let path = request_line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let whole = |status: &str, kind: &str, body: &str| {
        format!(
            "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let chunk =
        |text: &str| format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n");
    if path.ends_with("/metrics") {
        scrapes.fetch_add(1, Ordering::SeqCst);
        if matches!(mode, Mode::SilentMetrics) {
            // Never answers: holds the connection until the server stops.
            while !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
            return Ok(());
        }
        return sock.write_all(whole("404 Not Found", "text/plain", "").as_bytes());
    }
    if path.ends_with("/models") {
        let name = match mode {
            Mode::LongModelName => "m".repeat(4096),
            _ => "m".to_owned(),
        };
        let body = format!("{{\"object\":\"list\",\"data\":[{{\"id\":\"{name}\",\"object\":\"model\"}}]}}");
        return sock.write_all(whole("200 OK", "application/json", &body).as_bytes());
    }
    match mode {
        Mode::SilentMetrics | Mode::LongModelName => {
            sock.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n")?;
            for text in ["a", "b", "c"] {
                sock.write_all(chunk(text).as_bytes())?;
                std::thread::sleep(Duration::from_millis(5));
            }
            let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\n";
            sock.write_all(format!("{usage}data: [DONE]\n\n").as_bytes())
        }
        Mode::EchoPhp => {
            let body = format!("{{\"detail\":\"Invalid token {}\"}}", auth.replace('/', "\\/"));
            sock.write_all(whole("401 Unauthorized", "application/json", &body).as_bytes())
        }
        Mode::Whole => {
            let body = "{\"id\":\"x\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\
                        \"assistant\",\"content\":\"hello there world\"},\"finish_reason\":\"stop\"}],\"usage\":\
                        {\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}";
            sock.write_all(whole("200 OK", "application/json", body).as_bytes())
        }
    }
}

/// An open loop against a server whose /metrics never answers: the probe's
/// 5 s wait comes before the clock starts, so no request waits behind it
/// (the wait had been charged to the schedule: every request of the first
/// 5 s went in one burst, client queue 3-5 s), and the probe's silence is
/// said once, with what to do.
#[test]
fn a_silent_metrics_endpoint_delays_the_start_and_bunches_no_request() {
    let server = Server::start(Mode::SilentMetrics);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = bench(&server, &["-n", "10", "--rate", "10", "--seed", "1"], &out);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    let said = format!("warning: {}/metrics gave no whole answer within 5s", server.url);
    assert_eq!(err.matches(&said).count(), 1, "{err}");
    assert!(err.contains("--metrics-url URL") && err.contains("--no-metrics"), "{err}");
    let v = read_json(&out);
    assert_eq!(v["summary"]["requests"]["completed"], 10, "{}", v["summary"]["requests"]);
    // Bunched behind the probe, the queue had been the probe's 5 s.
    let queue = v["summary"]["client_queue_ms"]["max"].as_f64().unwrap();
    assert!(queue < 1000.0, "a request waited {queue} ms past its time");
    // The schedule spans its 10 requests at 10/s: not sent at once.
    let window = v["window"]["duration_s"].as_f64().unwrap();
    assert!(window > 0.5, "the window is {window} s");
    // (No check of the diagnosis: on a busy machine the client may be late
    // by tens of milliseconds and say so; the probe's 5 s is what the queue
    // bound above rules out.)
    assert!(v["server_signals"].is_null(), "no metrics were read: {}", v["server_signals"]);
}

/// A sweep against the same silent /metrics probes it once, not before
/// every point: each probe had cost its point the 5 s wait.
#[test]
fn a_sweep_probes_a_silent_metrics_endpoint_once() {
    let server = Server::start(Mode::SilentMetrics);
    let dir = tempfile::tempdir().unwrap();
    let o = goodput()
        .args(["sweep", "-q", "--url", &server.url, "--model", "m", "--concurrency", "1,2,3", "-n", "3"])
        .arg("-o")
        .arg(dir.path().join("sweep.json"))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(server.scrapes.load(Ordering::SeqCst), 1, "three points, one probe: {err}");
    let said = format!("warning: {}/metrics gave no whole answer within 5s", server.url);
    assert_eq!(err.matches(&said).count(), 1, "{err}");
}

/// A key a server echoes JSON-escaped the PHP way (`tok-SECRET\/abc+def==`)
/// is masked in stderr, the result, the records and the HTML report.
#[test]
fn a_key_echoed_json_escaped_is_masked_everywhere() {
    let server = Server::start(Mode::EchoPhp);
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    let (records, html) = (p("rec.jsonl"), p("run.html"));
    let (records, html) = (records.to_str().unwrap(), html.to_str().unwrap());
    let args = ["-n", "2", "-c", "1", "--no-metrics", "--api-key", "tok-SECRET/abc+def==", "--records", records];
    let o = bench(&server, &[&args[..], &["--html", html]].concat(), &p("run.json"));
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(err.contains("Invalid token ***"), "the server's words are kept, the key masked: {err}");
    let mut all = err + &String::from_utf8_lossy(&o.stdout);
    for f in ["run.json", "rec.jsonl", "run.html"] {
        let text = std::fs::read_to_string(p(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(text.contains("Invalid token ***"), "{f} keeps the message, masked");
        all += &text;
    }
    assert!(!all.contains("SECRET"), "the key was written:\n{all}");
}

/// Streamed requests answered with one JSON body (a server that ignores
/// `stream: true`): the result warns that their TTFT is the whole response's
/// time, and a TPOT SLO is not met by them (it had passed with TPOT "-").
#[test]
fn streamed_requests_answered_whole_are_warned_of_and_meet_no_tpot_term() {
    let server = Server::start(Mode::Whole);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run.json");
    let o = bench(&server, &["-n", "3", "-c", "1", "--no-metrics", "--slo", "tpot<=50ms"], &out);
    let err = String::from_utf8_lossy(&o.stderr);
    let v = read_json(&out);
    assert_eq!(v["summary"]["requests"]["completed"], 3, "{err}");
    let warned =
        v["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("asked to stream"));
    let warned = warned.unwrap_or_else(|| panic!("no warning: {}", v["warnings"]));
    assert!(
        warned.starts_with("3 of 3 completed requests") && warned.contains("TTFT is the whole response's time"),
        "{warned}"
    );
    assert_eq!(v["summary"]["goodput"]["good_requests"], 0, "{}", v["summary"]["goodput"]);
    assert_eq!(v["slo"]["pass"], false, "{}", v["slo"]);
    // The same with --no-stream: asked for whole, so nothing to warn of.
    let o = bench(&server, &["-n", "2", "-c", "1", "--no-metrics", "--no-stream"], &out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = read_json(&out);
    assert!(!v["warnings"].to_string().contains("asked to stream"), "{}", v["warnings"]);
    assert!(!v["warnings"].to_string().contains("were not streamed"), "{}", v["warnings"]);
    // With a TPOT term as well, --no-stream's whole answers meet none of it:
    // the result says why every request failed the SLO.
    let o = bench(&server, &["-n", "2", "-c", "1", "--no-metrics", "--no-stream", "--slo", "tpot<=50ms"], &out);
    let v = read_json(&out);
    let warned =
        v["warnings"].as_array().unwrap().iter().filter_map(|w| w.as_str()).find(|w| w.contains("--no-stream"));
    let warned =
        warned.unwrap_or_else(|| panic!("no warning: {}; {}", v["warnings"], String::from_utf8_lossy(&o.stderr)));
    assert!(warned.starts_with("2 of 2 completed requests were not streamed") && warned.contains("tpot"), "{warned}");
    assert_eq!(v["summary"]["goodput"]["good_requests"], 0, "{}", v["summary"]["goodput"]);
}

/// A model list whose name is longer than any model's is refused, saying
/// how long and to give --model (4 KiB of it had been printed and written).
#[test]
fn a_model_list_name_past_1024_bytes_is_refused() {
    let server = Server::start(Mode::LongModelName);
    let o = goodput()
        .args(["bench", "-q", "--url", &server.url, "-n", "1", "--no-metrics"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("a model name of 4096 bytes at /v1/models, more than the 1024") && err.contains("--model NAME"),
        "{err}"
    );
    assert!(!err.contains(&"m".repeat(200)), "the name is not printed: {err}");
}
