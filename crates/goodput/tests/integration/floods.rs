//! `goodput bench` against servers that flood the socket with bytes that
//! are no answer, as fast as the client reads them: the run ends at its
//! `--timeout` (or sooner) and at a Ctrl-C within its `--grace`, and writes
//! its result and records. A flood of `100 Continue` heads had kept a run
//! with `--timeout 2s` going for up to 49 s, and one with `--timeout 60s
//! --grace 1s` up to 42 s after a Ctrl-C: while the socket never ran dry
//! the client's reads never gave its worker back, so neither the deadline
//! nor the cancel came.

use crate::cmd::{goodput, goodput_child, read_json, records, GoodputCommand, Kill};
use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A server on 127.0.0.1:0 that answers the model list, 404s any other
/// GET, and answers each POST with `opening` and then `flood` again and
/// again until the client goes or the server is dropped (which ends its
/// threads). `flooding` says a POST's flood has begun.
struct Flood {
    url: String,
    stop: Arc<AtomicBool>,
    flooding: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Flood {
    fn start(opening: &[u8], flood: Vec<u8>) -> Flood {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (stop, flooding) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let (s, f, opening, flood) = (stop.clone(), flooding.clone(), Arc::new(opening.to_vec()), Arc::new(flood));
        let thread = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (s, f, opening, flood) = (s.clone(), f.clone(), opening.clone(), flood.clone());
                        conns.push(std::thread::spawn(move || serve(sock, &opening, &flood, &s, &f)));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    Err(_) => break,
                }
            }
            for c in conns {
                let _ = c.join();
            }
        });
        Flood { url, stop, flooding, thread: Some(thread) }
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut sock: TcpStream, opening: &[u8], flood: &[u8], stop: &AtomicBool, flooding: &AtomicBool) {
    sock.set_nonblocking(false).unwrap();
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = sock.set_write_timeout(Some(Duration::from_millis(100)));
    let got = crate::cmd::read_request(&mut std::io::BufReader::new(&sock));
    if got.is_empty() {
        return;
    }
    if got.starts_with("GET /v1/models") {
        let models = r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#;
        let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close";
        let _ = write!(sock, "{head}\r\ncontent-length: {}\r\n\r\n{models}", models.len());
        return;
    }
    if got.starts_with("GET") {
        let _ = sock.write_all(b"HTTP/1.1 404 Not Found\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
        return;
    }
    flooding.store(true, Ordering::SeqCst);
    // Where the next write starts, in the opening and then in the flood: a
    // write cut short goes on where it stopped, so the flood stays whole
    // heads and lines.
    let mut at = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let piece = if at < opening.len() { &opening[at..] } else { &flood[(at - opening.len()) % flood.len()..] };
        match sock.write(piece) {
            Ok(0) => return,
            Ok(n) => at += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// The probe's command against `100 Continue` heads without end: the run
/// ends long before 20 s (goodput's client fails the request once more
/// than `MAX_INTERIM_HEADS` came), the request an invalid response naming
/// the flood, its result and records written. It had ended after 2.2 to
/// 49 s.
#[test]
fn a_bench_against_endless_interim_heads_ends_and_writes_its_result() {
    let server = Flood::start(b"", b"HTTP/1.1 100 Continue\r\n\r\n".repeat(40_000));
    let dir = tempfile::tempdir().unwrap();
    let (out, rec) = (dir.path().join("r.json"), dir.path().join("r.jsonl"));
    let began = Instant::now();
    let o = goodput()
        .args(["bench", "--url", &server.url, "--model", "m", "-n", "1", "-c", "1", "--timeout", "2s"])
        .args(["--grace", "1s", "--no-metrics", "-q"])
        .writing(&out, &rec)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let took = began.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(took < Duration::from_secs(20), "the run took {took:?}: {stderr}");
    assert_eq!(o.status.code(), Some(1), "no request succeeded: {stderr}");
    let doc = read_json(&out);
    assert_eq!(doc["summary"]["requests"]["errors_by_kind"]["invalid_response"], 1, "{}", doc["summary"]);
    let recs = records(&rec);
    assert_eq!(recs.len(), 1);
    match &recs[0].outcome {
        goodput_core::Outcome::Failed { message, .. } => {
            assert!(message.contains("interim 1xx heads before its answer"), "{message}")
        }
        o => panic!("{o:?}"),
    }
}

/// Ctrl-C while an answer's stream is flooded (one token, then events
/// without content, without end), read by the request's own task
/// (`GOODPUT_STREAM_THREADS=0`) and by a stream reader thread: the run
/// stops, cancels the request once its 1 s grace is out, and writes its
/// result and records, long before the 60 s `--timeout`. With the task
/// reading, the cancel had waited until the socket ran dry (1 to 12 s
/// after the Ctrl-C in a release build), at worst for the timeout.
#[cfg(unix)]
#[test]
fn ctrl_c_during_a_flood_writes_the_result_within_the_grace() {
    let mut opening = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
    opening.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n");
    for threads in ["0", "1"] {
        // Events without content, which take the client longer to parse
        // than the server to send (a JSON parse each): the socket never
        // runs dry for long.
        let role = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
        let server = Flood::start(&opening, role.repeat(4_000));
        let dir = tempfile::tempdir().unwrap();
        let (out, rec) = (dir.path().join("r.json"), dir.path().join("r.jsonl"));
        let mut child = Kill(
            goodput_child()
                .env("GOODPUT_STREAM_THREADS", threads)
                .args(["bench", "--url", &server.url, "--model", "m", "-n", "1", "-c", "1", "--timeout", "60s"])
                .args(["--grace", "1s", "--no-metrics", "-q", "-o"])
                .arg(&out)
                .arg("--records")
                .arg(&rec)
                .spawn()
                .unwrap(),
        );
        let waited = Instant::now();
        while !server.flooding.load(Ordering::SeqCst) {
            assert!(waited.elapsed() < Duration::from_secs(60), "threads {threads}: no request after a minute");
            assert!(child.0.try_wait().unwrap().is_none(), "threads {threads}: the run ended by itself");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Well into the flood.
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.0.id() as i32, libc::SIGINT) };
        let stopped = Instant::now();
        let status = loop {
            if let Some(s) = child.0.try_wait().unwrap() {
                break s;
            }
            // The 1 s grace, and a wide margin: far from the 60 s timeout.
            assert!(stopped.elapsed() < Duration::from_secs(20), "threads {threads}: still running 20 s after Ctrl-C");
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stderr = String::new();
        std::io::Read::read_to_string(&mut child.0.stderr.take().unwrap(), &mut stderr).unwrap();
        assert_eq!(status.code(), Some(130), "threads {threads}: {stderr}");
        assert!(stderr.contains("stopping the run (Ctrl-C)"), "threads {threads}: {stderr}");
        let doc = read_json(&out);
        assert_eq!(doc["interrupted"], true, "threads {threads}");
        let recs = records(&rec);
        assert_eq!(recs.len(), 1, "threads {threads}");
        assert_eq!(recs[0].outcome, goodput_core::Outcome::Cancelled, "threads {threads}");
    }
}
