//! Servers that flood the socket: bytes that wait to be read as fast as
//! the client reads them, in a part of the response that hands out no
//! answer (interim 1xx heads, chunked trailers, what follows `[DONE]`,
//! events without content). Over real TCP on 127.0.0.1:0, the server a
//! thread of its own. Each exchange ends within a causal bound (its
//! timeout, a cancel) with the kind it is: while the socket never ran dry
//! the client's reads, which took none of tokio's cooperative budget,
//! never yielded, and held the request's task, and its worker, past
//! `--timeout` and a Ctrl-C (for 49 s against a 2 s timeout). Whether a
//! socket runs dry depends on how fast each side runs, so these tests
//! cannot always catch that; `http1::tests::a_read_yields_once_the_task_s_budget_is_spent`
//! and `client::tests::an_exchange_that_spends_its_budget_meets_its_deadline_and_its_cancel`
//! hold the mechanism without a server.

use crate::common;

use goodput_core::{FailureKind, Outcome, RequestRecord};
use goodput_load::{Api, Client, ClientConfig, Transport};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Wide enough for a busy machine: an exchange bounded by a timeout or a
/// cancel ends within it of that bound.
const MARGIN: Duration = Duration::from_secs(10);

/// A server on 127.0.0.1:0 that reads each request, writes `opening`, then
/// writes `flood` again and again, as fast as the client takes it, until
/// the client goes or the server is dropped (which ends its threads).
struct Flood {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Flood {
    fn start(opening: Vec<u8>, flood: Vec<u8>) -> Flood {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let (opening, flood) = (Arc::new(opening), Arc::new(flood));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut conns = Vec::new();
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((sock, _)) => {
                        let (s, opening, flood) = (s.clone(), opening.clone(), flood.clone());
                        conns.push(std::thread::spawn(move || serve(sock, &opening, &flood, &s)));
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
        Flood { url, stop, thread: Some(thread) }
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

/// One connection: its request read (head and Content-Length body), then
/// the opening and the flood, without end. A write that waits more than
/// 100 ms looks at `stop` again; the flood goes on where a write left it,
/// so that its bytes stay whole heads, lines or chunks.
fn serve(mut sock: TcpStream, opening: &[u8], flood: &[u8], stop: &AtomicBool) {
    sock.set_nonblocking(false).unwrap();
    let _ = sock.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = sock.set_write_timeout(Some(Duration::from_millis(100)));
    let mut got = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(h) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..h]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .unwrap_or(0);
            if got.len() >= h + 4 + len {
                break;
            }
        }
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let opened = opening.len();
    // Where the next write starts: in the opening, then in the flood.
    let mut at = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let piece = if at < opened { &opening[at..] } else { &flood[(at - opened) % flood.len()..] };
        match sock.write(piece) {
            Ok(0) => return,
            Ok(n) => at += n,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return,
        }
    }
}

/// The bytes of `payload` as one HTTP chunk.
fn chunk(payload: &[u8]) -> Vec<u8> {
    let mut c = format!("{:x}\r\n", payload.len()).into_bytes();
    c.extend_from_slice(payload);
    c.extend_from_slice(b"\r\n");
    c
}

/// A chunked event stream's head and its one token, "hi".
fn streamed_hi() -> Vec<u8> {
    let mut b = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    b.extend(chunk(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"));
    b
}

fn config(url: &str, transport: Transport, timeout: Duration) -> ClientConfig {
    common::config(url, Api::Chat, true, timeout, transport)
}

/// One streamed request through `client`, cancelled (as a second Ctrl-C
/// cancels what is in flight) after `cancel_after` if given; the record
/// and how long it took.
async fn one(client: &Client, cancel_after: Option<Duration>) -> (RequestRecord, Duration) {
    let item = goodput_load::workload::WorkItem {
        prompt: goodput_load::PromptBody::Text("hello".into()),
        intended_input_tokens: None,
        max_tokens: Some(4),
        session: None,
        reference: Vec::new().into(),
        repeat: None,
        media: Default::default(),
    };
    let abort = CancellationToken::new();
    let canceller = cancel_after.map(|d| {
        let abort = abort.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            abort.cancel();
        })
    });
    let began = Instant::now();
    let origin = tokio::time::Instant::now();
    let rec = client.execute(0, &item, Duration::ZERO, origin, &abort).await;
    let took = began.elapsed();
    if let Some(c) = canceller {
        c.abort();
    }
    (rec, took)
}

fn failure(r: &RequestRecord) -> (FailureKind, String) {
    match &r.outcome {
        Outcome::Failed { kind, message } => (*kind, message.clone()),
        o => panic!("expected a failure, got {o:?}"),
    }
}

/// Interim heads without end (`100 Continue`, as the probe sent them, and
/// `103 Early Hints` with headers): goodput's client takes
/// `MAX_INTERIM_HEADS` and fails the exchange as an invalid response naming
/// the flood, long before its timeout; reqwest (hyper) ends at its timeout.
/// goodput's client had skipped them without end and without yielding: a
/// 2 s timeout had ended after 2.2 to 49 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_interim_heads_fails_naming_it() {
    let timeout = Duration::from_secs(2);
    let hints = format!("HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n{}\r\n", "x-a: b\r\n".repeat(50));
    for flood in [b"HTTP/1.1 100 Continue\r\n\r\n".repeat(4000), hints.as_bytes().repeat(100)] {
        let server = Flood::start(Vec::new(), flood);
        let client = Client::new(config(&server.url, Transport::Auto, timeout), None).unwrap();
        let (r, took) = one(&client, None).await;
        let (kind, message) = failure(&r);
        assert_eq!(kind, FailureKind::InvalidResponse, "{message}");
        let n = goodput_load::http1::MAX_INTERIM_HEADS + 1;
        assert!(message.contains(&format!("the server sent {n} interim 1xx heads before its answer")), "{message}");
        assert!(took < timeout + MARGIN, "{took:?}");
        let client = Client::new(config(&server.url, Transport::Reqwest, timeout), None).unwrap();
        let (r, took) = one(&client, None).await;
        let (kind, message) = failure(&r);
        assert!(matches!(kind, FailureKind::Timeout | FailureKind::InvalidResponse), "reqwest: {kind:?}: {message}");
        assert!(took < timeout + MARGIN, "reqwest: {took:?}");
    }
}

/// Events without content, without end, read by the request's own task
/// (no stream reader thread) and by a reader thread: a cancel (a second
/// Ctrl-C, or the first's grace run out) ends the exchange at once, and
/// the timeout at the timeout. The task had not yielded while the socket
/// had bytes, so the cancel waited until the socket ran dry (1 to 12 s
/// after a Ctrl-C, with a 1 s grace), at worst for the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_flood_on_the_request_s_task_yields_to_the_cancel_and_the_timeout() {
    let mut opening = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n".to_vec();
    opening.extend_from_slice(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n");
    // Events that take the reader longer than the server takes to send
    // them (a JSON parse each), so that the socket never runs dry.
    let role = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n";
    let server = Flood::start(opening, role.repeat(4_000));
    for threads in [false, true] {
        let long = Duration::from_secs(60);
        let client =
            Client::new(config(&server.url, Transport::Auto, long), None).unwrap().with_stream_threads(threads);
        let cancel = Duration::from_secs(1);
        let (r, took) = one(&client, Some(cancel)).await;
        assert_eq!(r.outcome, Outcome::Cancelled, "threads {threads}");
        assert_eq!(r.chunks.len(), 1, "threads {threads}: the token before the flood is kept");
        assert!(took < cancel + MARGIN, "threads {threads}: cancelled after {cancel:?}, ended after {took:?}");
        let timeout = Duration::from_secs(2);
        let client =
            Client::new(config(&server.url, Transport::Auto, timeout), None).unwrap().with_stream_threads(threads);
        let (r, took) = one(&client, None).await;
        assert_eq!(failure(&r).0, FailureKind::Timeout, "threads {threads}");
        assert!(took >= timeout && took < timeout + MARGIN, "threads {threads}: {took:?}");
    }
}

/// `[DONE]`, then chunks without end: the answer is whole at `[DONE]`, and
/// the rest of the framing is read for half a second at most, for the
/// connection's sake (`release_after_stop`). That half second's timer
/// could not fire while the socket had bytes, nor the request's deadline:
/// the request, done, held its task and worker as long as the socket did
/// not run dry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_after_done_ends_the_request_as_a_success() {
    let mut opening = streamed_hi();
    opening.extend(chunk(b"data: [DONE]\n\n"));
    // Chunks of a byte each: the framing takes the client longer to read
    // than the server to send, so that the socket never runs dry.
    let server = Flood::start(opening, chunk(b":").repeat(20_000));
    let timeout = Duration::from_secs(30);
    for t in [Transport::Auto, Transport::Reqwest] {
        let client = Client::new(config(&server.url, t, timeout), None).unwrap();
        let (r, took) = one(&client, None).await;
        assert_eq!(r.outcome, Outcome::Success, "{t:?}");
        assert_eq!(r.chunks.len(), 1, "{t:?}");
        // Half a second of draining, far from the timeout.
        assert!(took < MARGIN, "{t:?}: {took:?}");
    }
}

/// The last chunk, then trailer lines without end: trailers hand out no
/// payload, so the reads went on with no step to show, on a stream reader
/// thread (whose turn, counted in steps, did not end while the socket had
/// bytes, and whose lock the task then waited for at its deadline,
/// blocking its worker) or on the task. Past 64 KiB of trailers the
/// framing is broken: the stream ends as cut, the token before kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trailers_without_end_break_the_framing() {
    let mut opening = streamed_hi();
    opening.extend_from_slice(b"0\r\n");
    let server = Flood::start(opening, b"x-trailer: more\r\n".repeat(1000));
    let timeout = Duration::from_secs(2);
    for threads in [true, false] {
        let client =
            Client::new(config(&server.url, Transport::Auto, timeout), None).unwrap().with_stream_threads(threads);
        let (r, took) = one(&client, None).await;
        let (kind, message) = failure(&r);
        assert_eq!(kind, FailureKind::TruncatedStream, "threads {threads}: {message}");
        assert!(message.contains("trailer lines"), "threads {threads}: {message}");
        assert_eq!(r.chunks.len(), 1, "threads {threads}");
        assert!(took < timeout + MARGIN, "threads {threads}: {took:?}");
    }
    let client = Client::new(config(&server.url, Transport::Reqwest, timeout), None).unwrap();
    let (r, took) = one(&client, None).await;
    assert!(!r.outcome.is_success(), "reqwest: {:?}", r.outcome);
    assert!(took < timeout + MARGIN, "reqwest: {took:?}");
}
