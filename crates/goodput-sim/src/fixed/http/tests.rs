//! The fixed profile's HTTP server over raw sockets on 127.0.0.1:0: the
//! protocol (keep-alive, split requests, errors), the exact streamed bytes,
//! the emitter's order within a burst, and a slow reader beside fast ones.

use super::super::emitter::{Emitter, End, Stream};
use super::super::{FixedProfile, FixedServer, Reply};
use super::serve_with;
use crate::connections::ConnectionLimits;
use crate::faults::FaultConfig;
use crate::openai::{ChunkWriter, Route, Usage};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::timeout;

/// Far longer than any answer takes: a hang fails the test instead of stalling it.
const PATIENCE: Duration = Duration::from_secs(10);

async fn start(profile: FixedProfile) -> (SocketAddr, Arc<FixedServer>, Arc<Emitter>) {
    start_limited(profile, ConnectionLimits::default()).await
}

async fn start_limited(
    profile: FixedProfile,
    limits: ConnectionLimits,
) -> (SocketAddr, Arc<FixedServer>, Arc<Emitter>) {
    let server = FixedServer::new(profile);
    let emitter = Arc::new(Emitter::start(server.clone()).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_with(listener, server.clone(), emitter.clone(), limits, std::future::pending()));
    (addr, server, emitter)
}

fn quick() -> FixedProfile {
    FixedProfile { ttft: Duration::from_millis(5), itl: Duration::from_millis(2), ..Default::default() }
}

/// One response as read off the socket: chunked bodies keep their chunks.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    chunks: Vec<Vec<u8>>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The `data:` payloads of an SSE body.
    fn events(&self) -> Vec<String> {
        String::from_utf8(self.body.clone())
            .unwrap()
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .map(str::to_owned)
            .collect()
    }
}

async fn more(sock: &mut TcpStream, buf: &mut Vec<u8>) -> usize {
    buf.reserve(16384);
    timeout(PATIENCE, sock.read_buf(buf)).await.expect("the server hangs").unwrap()
}

/// Reads one response; `buf` keeps what follows it.
async fn read_response(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Resp {
    let (status, headers) = loop {
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut hs);
        if let httparse::Status::Complete(n) = r.parse(buf).unwrap() {
            let status = r.code.unwrap();
            let headers = r
                .headers
                .iter()
                .map(|h| (h.name.to_owned(), String::from_utf8(h.value.to_vec()).unwrap()))
                .collect::<Vec<_>>();
            buf.drain(..n);
            break (status, headers);
        }
        assert!(more(sock, buf).await > 0, "closed before the response head");
    };
    let mut resp = Resp { status, headers, chunks: Vec::new(), body: Vec::new() };
    if resp.header("transfer-encoding") == Some("chunked") {
        loop {
            let Some(eol) = buf.windows(2).position(|w| w == b"\r\n") else {
                assert!(more(sock, buf).await > 0, "closed inside the chunked body");
                continue;
            };
            let size = usize::from_str_radix(std::str::from_utf8(&buf[..eol]).unwrap(), 16).unwrap();
            if buf.len() < eol + 2 + size + 2 {
                assert!(more(sock, buf).await > 0, "closed inside a chunk");
                continue;
            }
            assert_eq!(&buf[eol + 2 + size..eol + 4 + size], b"\r\n", "a chunk ends in CRLF");
            let chunk = buf[eol + 2..eol + 2 + size].to_vec();
            buf.drain(..eol + 4 + size);
            if size == 0 {
                break;
            }
            resp.body.extend_from_slice(&chunk);
            resp.chunks.push(chunk);
        }
    } else if let Some(len) = resp.header("content-length") {
        let len: usize = len.parse().unwrap();
        while buf.len() < len {
            assert!(more(sock, buf).await > 0, "closed inside the body");
        }
        resp.body = buf.drain(..len).collect();
    } else {
        while more(sock, buf).await > 0 {}
        resp.body = std::mem::take(buf);
    }
    resp
}

/// Whether the server closed the connection, sending nothing more (an open
/// one stays silent for the 300 ms this waits).
async fn closed(sock: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    closed_within(sock, buf, Duration::from_millis(300)).await
}

/// [`closed`], waiting up to `wait`.
async fn closed_within(sock: &mut TcpStream, buf: &mut Vec<u8>, wait: Duration) -> bool {
    matches!(timeout(wait, sock.read_buf(buf)).await, Ok(Ok(0)) | Ok(Err(_)))
}

fn post(path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn chat(max_tokens: u32, stream: bool) -> String {
    let body = format!(
        r#"{{"messages":[{{"role":"user","content":"one two three"}}],"max_tokens":{max_tokens},"stream":{stream},"stream_options":{{"include_usage":true}}}}"#
    );
    post("/v1/chat/completions", &body)
}

#[tokio::test]
async fn one_connection_serves_requests_one_after_another() {
    let (addr, _s, _e) = start(quick()).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    sock.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    assert_eq!(r.header("server"), Some("goodput-sim"));
    // A stream, then a whole response, then /v1/models: all on the same socket.
    sock.write_all(chat(3, true).as_bytes()).await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("server"), Some("goodput-sim"));
    assert_eq!(r.events().last().map(String::as_str), Some("[DONE]"));
    sock.write_all(chat(3, false).as_bytes()).await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["usage"]["completion_tokens"], 3);
    assert_eq!(r.json()["choices"][0]["message"]["content"].as_str().unwrap().split_whitespace().count(), 3);
    // Two requests in one write (pipelined) get two responses in order.
    sock.write_all(b"GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\nGET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .await
        .unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!(r.json()["data"][0]["id"], "goodput-fixed");
    let r = read_response(&mut sock, &mut buf).await;
    let text = String::from_utf8(r.body).unwrap();
    assert!(text.contains("goodput_sim_requests_total 2\n"), "{text}");
    assert!(text.contains("goodput_sim_chunk_lateness_seconds_count 2\n"), "{text}");
    // A histogram has its _sum (strict parsers had refused the text).
    for h in ["goodput_sim_chunk_lateness_seconds", "goodput_sim_chunk_gap_error_seconds"] {
        assert!(text.contains(&format!("{h}_sum ")), "{text}");
    }
    // Two token chunks, one gap between them.
    assert!(text.contains("goodput_sim_chunk_gap_error_seconds_count 1\n"), "{text}");
    // `Connection: close` is honoured.
    sock.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!(r.header("connection"), Some("close"));
    assert!(closed(&mut sock, &mut buf).await);
}

#[tokio::test]
async fn a_request_split_across_many_writes() {
    let (addr, _s, _e) = start(quick()).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let req = chat(4, false);
    // Cut inside the request line, inside a header, between head and body, and inside the body.
    let cuts = [3, 20, req.find("\r\n\r\n").unwrap() + 2, req.len() - 10, req.len()];
    let mut from = 0;
    for to in cuts {
        sock.write_all(&req.as_bytes()[from..to]).await.unwrap();
        sock.flush().await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        from = to;
    }
    let mut buf = Vec::new();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["usage"]["completion_tokens"], 4);
}

#[tokio::test]
async fn bad_requests_get_a_clear_status_not_a_hang() {
    let (addr, _s, _e) = start(quick()).await;
    let ask = |req: Vec<u8>| async move {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(&req).await.unwrap();
        let mut buf = Vec::new();
        let r = read_response(&mut sock, &mut buf).await;
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert_eq!(r.json()["error"]["code"], r.status);
        assert_eq!(r.header("server"), Some("goodput-sim"));
        (r.status, message, closed(&mut sock, &mut buf).await, r.header("allow").map(str::to_owned))
    };
    let (status, msg, closed, _) = ask(b"THIS IS NOT HTTP\r\n\r\n".to_vec()).await;
    assert_eq!((status, closed), (400, true), "{msg}");
    assert!(msg.contains("malformed HTTP request"), "{msg}");
    let chunked = b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
    let (status, msg, closed, _) = ask(chunked.to_vec()).await;
    assert_eq!((status, closed), (400, true));
    assert!(msg.contains("Content-Length"), "{msg}");
    let huge = format!("GET /health HTTP/1.1\r\nX-Big: {}\r\n\r\n", "a".repeat(70_000));
    let (status, msg, _, _) = ask(huge.into_bytes()).await;
    assert_eq!(status, 413);
    assert!(msg.contains("request head"), "{msg}");
    let (status, msg, _, _) = ask(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: x1\r\n\r\n".to_vec()).await;
    assert_eq!(status, 400);
    assert!(msg.contains("Content-Length"), "{msg}");
    // Errors after routing keep the connection open.
    let (status, msg, closed, _) = ask(b"GET /v2/nothing HTTP/1.1\r\n\r\n".to_vec()).await;
    assert_eq!((status, closed), (404, false));
    assert!(msg.contains("/v2/nothing"), "{msg}");
    let (status, _, closed, allow) = ask(b"GET /v1/completions HTTP/1.1\r\n\r\n".to_vec()).await;
    assert_eq!((status, closed, allow.as_deref()), (405, false, Some("POST")));
    let (status, _, _, allow) = ask(post("/health", "{}").into_bytes()).await;
    assert_eq!((status, allow.as_deref()), (405, Some("GET, HEAD")));
    // vLLM's cache reset: the fixed profile has no cache, so a 200 that does nothing; POST only.
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(post("/reset_prefix_cache", "").as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    assert_eq!(read_response(&mut sock, &mut buf).await.status, 200);
    let (status, _, _, allow) = ask(b"GET /reset_prefix_cache HTTP/1.1\r\n\r\n".to_vec()).await;
    assert_eq!((status, allow.as_deref()), (405, Some("POST")));
    let (status, msg, closed, _) = ask(post("/v1/chat/completions", "{nope").into_bytes()).await;
    assert_eq!((status, closed), (400, false));
    assert!(msg.contains("invalid JSON body"), "{msg}");
}

/// A billion tokens is refused at once: with no wait between chunks the
/// whole answer was written out, a billion words, before a byte went back.
#[tokio::test]
async fn an_answer_longer_than_the_profile_gives_is_refused() {
    let (addr, _s, _e) = start(FixedProfile { ttft: Duration::ZERO, itl: Duration::ZERO, ..Default::default() }).await;
    for stream in [false, true] {
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(chat(1_000_000_000, stream).as_bytes()).await.unwrap();
        let mut buf = Vec::new();
        let r = timeout(Duration::from_secs(2), read_response(&mut sock, &mut buf)).await.expect("no quick refusal");
        assert_eq!(r.status, 400);
        let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains("1000000000") && message.contains("lower max_tokens"), "{message}");
    }
    // The most it gives is still answered.
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(chat(super::super::MAX_OUTPUT_TOKENS, false).as_bytes()).await.unwrap();
    let r = read_response(&mut sock, &mut Vec::new()).await;
    assert_eq!(r.status, 200);
}

/// More messages than any model's context has tokens are refused before
/// the list is parsed (millions of empty ones took gigabytes), and a prompt
/// of token ids counts one token an id.
#[tokio::test]
async fn too_many_messages_are_refused_and_ids_count_one_token_each() {
    let (addr, _s, _e) = start(FixedProfile { ttft: Duration::ZERO, itl: Duration::ZERO, ..Default::default() }).await;
    let limit = super::super::MAX_MESSAGES as usize;
    let many = format!(r#"{{"messages":[{}],"max_tokens":2}}"#, vec!["{}"; limit + 1].join(","));
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(post("/v1/chat/completions", &many).as_bytes()).await.unwrap();
    let r = timeout(PATIENCE, read_response(&mut sock, &mut Vec::new())).await.unwrap();
    assert_eq!(r.status, 400);
    let message = r.json()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains(&format!("carries {} messages", limit + 1)), "{message}");
    assert!(message.contains(&format!("({limit}, above any model's context)")), "{message}");
    assert!(message.contains("send fewer messages"), "{message}");
    let ids = format!(r#"{{"prompt":[{}],"max_tokens":2}}"#, vec!["5"; 3_000].join(","));
    sock.write_all(post("/v1/completions", &ids).as_bytes()).await.unwrap();
    let r = timeout(PATIENCE, read_response(&mut sock, &mut Vec::new())).await.unwrap();
    assert_eq!((r.status, &r.json()["usage"]["prompt_tokens"]), (200, &Value::from(3_000)));
}

#[tokio::test]
async fn streamed_bytes_are_the_exact_chunk_sequence() {
    let (addr, _s, _e) = start(quick()).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    sock.write_all(chat(5, true).as_bytes()).await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    // The response's own `created` and request number (0, the first request).
    let first: Value = serde_json::from_str(&r.events()[0]).unwrap();
    assert_eq!(first["id"], "chatcmpl-0000000000000000");
    let w = ChunkWriter::new(Route::Chat, 0, "goodput-fixed", first["created"].as_u64().unwrap());
    // One HTTP chunk per piece: the preamble, each token chunk (2 tokens each,
    // the last 1), and the close with usage and [DONE].
    let want = [
        w.preamble(Usage::new(3, 0)),
        w.tokens(0, 2),
        w.tokens(2, 4),
        w.tokens(4, 5),
        w.close("length", Some(Usage::new(3, 5))),
    ];
    assert_eq!(r.chunks.len(), want.len(), "{:?}", r.events());
    for (got, want) in r.chunks.iter().zip(&want) {
        assert_eq!(String::from_utf8_lossy(got), String::from_utf8_lossy(want));
    }
}

#[tokio::test]
async fn faults_end_a_stream_the_right_way() {
    // Every request fails mid-stream with an error event: the response ends
    // cleanly and the connection serves the next one.
    let faults = FaultConfig { stream_error_rate: 1.0, ..Default::default() };
    let (addr, s, _e) = start(FixedProfile { faults, ..quick() }).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    for _ in 0..2 {
        sock.write_all(chat(6, true).as_bytes()).await.unwrap();
        let r = read_response(&mut sock, &mut buf).await;
        let ev = r.events();
        // The preamble (2 events), the first of 3 token chunks, and the error
        // where the second would be.
        assert_eq!(ev.len(), 4, "{ev:?}");
        assert!(ev[3].contains("injected fault: the engine failed mid-stream"));
    }
    assert_eq!(s.counters.stream_errors.load(std::sync::atomic::Ordering::Relaxed), 2);
    // A disconnect shuts the connection mid-body.
    let faults = FaultConfig { disconnect_rate: 1.0, ..Default::default() };
    let (addr, _s, _e) = start(FixedProfile { faults, ..quick() }).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(chat(6, true).as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    while more(&mut sock, &mut buf).await > 0 {}
    let text = String::from_utf8(buf).unwrap();
    assert!(text.contains("\"content\":\" "), "a token chunk came first: {text}");
    assert!(!text.ends_with("0\r\n\r\n") && !text.contains("[DONE]"), "the body is cut: {text}");
}

/// Streams that share one due time are written in the order they reached the
/// emitter, at every chunk: here all 20 start at the same instant.
#[tokio::test]
async fn ties_in_due_time_are_written_in_arrival_order() {
    let server = FixedServer::new(FixedProfile { itl: Duration::from_millis(3), tokens_per_chunk: 1, ..quick() });
    let emitter = Emitter::start(server.clone()).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let t0 = Instant::now() + Duration::from_millis(20);
    let body = br#"{"prompt":"x","max_tokens":10,"stream":true}"#;
    let mut plans = Vec::new();
    for _ in 0..20 {
        let Reply::Generate(p) = Reply::to(&server, Route::Completions, body, t0, None) else { panic!("a plan") };
        plans.push(p);
    }
    // Submitted in an order unlike the request numbers.
    let order: Vec<u64> = (0..20u64).map(|i| (i * 7) % 20).collect();
    let (mut clients, mut ends) = (Vec::new(), Vec::new());
    for &n in &order {
        let plan = plans.iter().position(|p| p.n == n).map(|i| plans.swap_remove(i)).unwrap();
        clients.push(std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap());
        let (sock, _) = listener.accept().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        emitter.submit(Stream::new(*plan, sock, true, tx).unwrap());
        ends.push(rx);
    }
    for rx in ends {
        assert_eq!(timeout(PATIENCE, rx).await.unwrap().unwrap(), End { keep_alive: true });
    }
    assert_eq!(emitter.trace().chunks().len(), 200);
    for i in 0..10 {
        assert_eq!(emitter.trace().burst(i), order, "chunk {i}");
    }
    assert_eq!(emitter.trace().early_writes(), 0, "no chunk is written before it is due");
}

/// Streams that arrive one by one over HTTP keep their place in every burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_stream_keeps_its_place_in_every_burst() {
    let profile =
        FixedProfile { ttft: Duration::from_millis(30), itl: Duration::from_millis(5), tokens_per_chunk: 1, ..quick() };
    let (addr, _s, emitter) = start(profile).await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        tasks.push(tokio::spawn(async move {
            let mut sock = TcpStream::connect(addr).await.unwrap();
            sock.write_all(chat(12, true).as_bytes()).await.unwrap();
            let mut buf = Vec::new();
            read_response(&mut sock, &mut buf).await
        }));
    }
    for t in tasks {
        let r = t.await.unwrap();
        assert_eq!(r.chunks.len(), 1 + 12 + 1, "the preamble, the token chunks, the close");
    }
    assert_eq!(emitter.trace().chunks().len(), 20 * 12);
    let first = emitter.trace().burst(0);
    assert_eq!(first.len(), 20);
    for i in 1..12 {
        assert_eq!(emitter.trace().burst(i), first, "chunk {i}");
    }
}

/// A client that stops reading fills its socket; its chunks wait in the
/// emitter while the other streams go on at their times.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_reader_does_not_delay_the_others() {
    let profile = FixedProfile {
        ttft: Duration::from_millis(10),
        itl: Duration::from_millis(2),
        tokens_per_chunk: 2000,
        ..Default::default()
    };
    let (addr, _s, emitter) = start(profile).await;
    // ~14 kB a chunk: 400 chunks (~6 MB) for the slow reader, 60 for the others.
    let slow_tokens = 2000 * 400;
    let stalled = Duration::from_millis(1000);
    let slow = tokio::spawn(async move {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.set_recv_buffer_size(4096).unwrap();
        let mut sock = sock.connect(addr).await.unwrap();
        sock.write_all(chat(slow_tokens, true).as_bytes()).await.unwrap();
        tokio::time::sleep(stalled).await;
        let resumed = Instant::now();
        let mut buf = Vec::new();
        (resumed, read_response(&mut sock, &mut buf).await)
    });
    let start = Instant::now();
    let mut fast = Vec::new();
    for _ in 0..3 {
        fast.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let mut sock = TcpStream::connect(addr).await.unwrap();
            sock.write_all(chat(2000 * 60, true).as_bytes()).await.unwrap();
            let mut buf = Vec::new();
            let r = read_response(&mut sock, &mut buf).await;
            (Instant::now(), r)
        }));
    }
    let mut fast_done = Vec::new();
    for f in fast {
        let (at, r) = f.await.unwrap();
        assert_eq!(r.chunks.len(), 1 + 60 + 1);
        fast_done.push(at);
    }
    let (resumed, r) = slow.await.unwrap();
    assert!(resumed >= start + stalled);
    // The slow reader still gets every token, in order.
    let ev = r.events();
    assert_eq!(ev.len(), 2 + 400 + 3, "chunks, finish, usage, [DONE]");
    let usage: Value = serde_json::from_str(&ev[ev.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], slow_tokens);
    // Its socket really did refuse writes, and the fast streams finished
    // while it was not reading, every chunk close to its time.
    assert!(emitter.trace().deferred_writes() > 0, "the slow reader never filled its socket");
    for at in fast_done {
        assert!(at < resumed, "a fast stream waited for the slow reader");
    }
    let first: Value = serde_json::from_str(&ev[0]).unwrap();
    let slow_n = u64::from_str_radix(first["id"].as_str().unwrap().trim_start_matches("chatcmpl-"), 16).unwrap();
    let worst = emitter.trace().chunks().iter().filter(|c| c.0 != slow_n).map(|c| c.2).max().unwrap();
    // Blocked on the slow socket, the emitter would hold them for most of
    // the second the slow reader sleeps.
    assert!(worst < Duration::from_millis(500), "a fast stream's chunk was {worst:?} late");
}

#[tokio::test]
async fn shutdown_stops_accepting_and_closes_idle_connections() {
    let server = FixedServer::new(quick());
    let emitter = Arc::new(Emitter::start(server.clone()).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(serve_with(listener, server, emitter, Default::default(), async {
        let _ = rx.await;
    }));
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    idle.write_all(b"GET /health HTTP/1.1\r\n\r\n").await.unwrap();
    assert_eq!(read_response(&mut idle, &mut buf).await.status, 200);
    tx.send(()).unwrap();
    timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    assert!(closed(&mut idle, &mut buf).await);
    assert!(TcpStream::connect(addr).await.is_err());
}

/// A slowloris no longer holds the server: more slow clients (half a head,
/// or nothing) than its cap are each closed when their head is late (1 s
/// here), the cap is logged, and a request queued behind them is answered.
#[tokio::test]
async fn slow_clients_are_timed_out_within_a_cap_and_the_server_answers_again() {
    let lines = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = lines.clone();
    let limits = ConnectionLimits {
        head_timeout: Duration::from_secs(1),
        max_connections: 50,
        log: Some(Arc::new(move |l: &str| sink.lock().unwrap().push(l.to_owned()))),
    };
    let (addr, _s, _e) = start_limited(quick(), limits).await;
    let mut slow = Vec::new();
    for i in 0..150 {
        let mut s = TcpStream::connect(addr).await.unwrap();
        if i % 2 == 0 {
            s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Le").await.unwrap();
        }
        slow.push(s);
    }
    let t0 = Instant::now();
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(chat(2, false).as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let r = timeout(Duration::from_secs(30), read_response(&mut sock, &mut buf)).await.expect("never answered");
    assert_eq!(r.status, 200);
    // It waited for the slow clients ahead of it to be timed out.
    assert!(t0.elapsed() >= Duration::from_millis(500), "{:?}", t0.elapsed());
    for s in slow.iter_mut().take(20) {
        let mut b = Vec::new();
        assert!(closed_within(s, &mut b, PATIENCE).await, "a slow client was left open");
    }
    let said = lines.lock().unwrap().join("\n");
    assert!(said.contains("50 connections are open, the most this server takes"), "{said}");
}

/// A body sent slower than the head's time allows closes the connection
/// (one sent a byte at a time had held it for ever).
#[tokio::test]
async fn a_body_that_trickles_past_the_time_limit_closes_the_connection() {
    let limits = ConnectionLimits { head_timeout: Duration::from_millis(300), ..ConnectionLimits::default() };
    let (addr, _s, _e) = start_limited(quick(), limits).await;
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n{").await.unwrap();
    let t0 = Instant::now();
    let mut buf = Vec::new();
    // Bytes keep coming, too slowly: the server closes all the same.
    let trickle = async {
        for _ in 0..50 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if sock.write_all(b" ").await.is_err() {
                break;
            }
        }
    };
    let _ = timeout(Duration::from_secs(5), trickle).await;
    assert!(closed_within(&mut sock, &mut buf, PATIENCE).await, "the trickling body held the connection");
    assert!(t0.elapsed() >= Duration::from_millis(300), "{:?}", t0.elapsed());
}

/// A client that leaves while its whole response is due far ahead frees
/// its connection at once, rather than when the answer would have been sent.
#[tokio::test]
async fn a_client_that_leaves_a_whole_response_frees_its_connection() {
    let profile = FixedProfile { ttft: Duration::from_secs(600), ..quick() };
    let limits = ConnectionLimits { max_connections: 1, ..ConnectionLimits::default() };
    let (addr, _s, _e) = start_limited(profile, limits).await;
    let mut gone = TcpStream::connect(addr).await.unwrap();
    gone.write_all(chat(4, false).as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    drop(gone);
    // The only place under the cap is free again.
    let mut sock = TcpStream::connect(addr).await.unwrap();
    sock.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
    let r = timeout(Duration::from_secs(5), read_response(&mut sock, &mut Vec::new())).await.expect("still held");
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn http_1_0_and_expect_continue() {
    let (addr, _s, _e) = start(quick()).await;
    // HTTP/1.0 has no chunked framing: the stream's body ends with the connection.
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let req = chat(4, true).replacen("HTTP/1.1", "HTTP/1.0", 1);
    sock.write_all(req.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!((r.status, r.header("transfer-encoding")), (200, None));
    assert_eq!(r.header("connection"), Some("close"));
    let ev = r.events();
    assert_eq!(ev.len(), 2 + 2 + 3, "the preamble, two token chunks, finish, usage, [DONE]: {ev:?}");
    assert_eq!(ev.last().map(String::as_str), Some("[DONE]"));
    // A client that waits for 100 Continue before the body gets it.
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let req = chat(2, false);
    let (head, body) = req.split_at(req.find("\r\n\r\n").unwrap() + 4);
    let head = head.replacen("\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n", 1);
    sock.write_all(head.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    while !buf.ends_with(b"\r\n\r\n") {
        assert!(more(&mut sock, &mut buf).await > 0);
    }
    assert_eq!(buf, b"HTTP/1.1 100 Continue\r\n\r\n");
    buf.clear();
    sock.write_all(body.as_bytes()).await.unwrap();
    let r = read_response(&mut sock, &mut buf).await;
    assert_eq!((r.status, r.json()["usage"]["completion_tokens"].as_u64()), (200, Some(2)));
}

/// How a raw read of a hostile response ended.
#[derive(Debug, PartialEq)]
enum Ended {
    /// The server closed the connection (FIN).
    Closed,
    /// The server reset it (RST).
    Reset,
    /// Nothing came for the wait given: the connection is open and silent.
    Silent,
    /// The read stopped at the cap given.
    Capped,
}

/// Reads what the server sends until it closes, resets, goes silent for
/// `idle`, or `cap` bytes came; also the number of reads.
async fn read_raw(sock: &mut TcpStream, cap: usize, idle: Duration) -> (Vec<u8>, Ended, usize) {
    let (mut buf, mut reads) = (Vec::new(), 0);
    loop {
        if buf.len() >= cap {
            return (buf, Ended::Capped, reads);
        }
        buf.reserve(65536);
        match timeout(idle, sock.read_buf(&mut buf)).await {
            Err(_) => return (buf, Ended::Silent, reads),
            Ok(Ok(0)) => return (buf, Ended::Closed, reads),
            Ok(Ok(_)) => reads += 1,
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionReset => return (buf, Ended::Reset, reads),
            Ok(Err(e)) => panic!("{e}"),
        }
    }
}

/// Each hostile case of `--fault`, on a streamed and on a whole response,
/// over a raw socket: the bytes are what the case says, and no case hangs
/// the server or takes down the connections beside it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hostile_case_sends_what_it_says() {
    use crate::faults::Hostile;
    let idle = Duration::from_millis(300);
    let gap = Duration::from_micros(100);
    for case in Hostile::ALL {
        let faults = FaultConfig { hostile: vec![(case, 1.0)], trickle_gap: gap, ..Default::default() };
        let (addr, s, _e) = start(FixedProfile { faults, ..quick() }).await;
        for stream in [true, false] {
            let what = format!("{case}, {}", if stream { "streamed" } else { "whole" });
            let mut sock = TcpStream::connect(addr).await.unwrap();
            // Connection: close, so that the read ends with the response
            // (but where the case is the close after a keep-alive one).
            let mut req = chat(6, stream);
            if case != Hostile::CloseAfterResponse {
                req = req.replacen("Host: t\r\n", "Host: t\r\nConnection: close\r\n", 1);
            }
            let sent = Instant::now();
            sock.write_all(req.as_bytes()).await.unwrap();
            let (bytes, ended, reads) = read_raw(&mut sock, 8 << 20, idle).await;
            let took = sent.elapsed();
            let text = String::from_utf8_lossy(&bytes);
            let head_end = text.find("\r\n\r\n").map_or(text.len(), |i| i + 4);
            let (head, body) = text.split_at(head_end);
            match case {
                Hostile::MalformedJson => {
                    let bad = body
                        .lines()
                        .filter_map(|l| l.strip_prefix("data: ").or(l.starts_with('{').then_some(l)))
                        .filter(|l| *l != "[DONE]")
                        .filter(|l| serde_json::from_str::<Value>(l).is_err())
                        .count();
                    assert_eq!(bad, 1, "{what}: {body}");
                }
                Hostile::NonUtf8 => {
                    assert!(std::str::from_utf8(&bytes).is_err(), "{what}");
                    assert!(text.contains('\u{FFFD}') && head.starts_with("HTTP/1.1 200"), "{what}");
                }
                Hostile::EndlessLine => {
                    assert_eq!(ended, Ended::Capped, "{what}");
                    let tail = &bytes[bytes.len() - 1000..];
                    assert!(tail.iter().all(|&b| b == b'a' || b"\r\n0123456789abcdef".contains(&b)), "{what}");
                    assert!(!body.contains("[DONE]"), "{what}");
                }
                Hostile::OversizedHeader => {
                    assert!(head.len() > 1 << 20 && head.starts_with("HTTP/1.1 200"), "{what}: {}", head.len());
                }
                Hostile::ResetBefore => assert_eq!((ended, bytes.len()), (Ended::Reset, 0), "{what}"),
                Hostile::ResetDuring => {
                    assert_eq!(ended, Ended::Reset, "{what}");
                    assert!(head.starts_with("HTTP/1.1 200") && !body.contains("[DONE]"), "{what}: {text}");
                }
                Hostile::NeverAnswer => assert_eq!((ended, bytes.len()), (Ended::Silent, 0), "{what}"),
                Hostile::Trickle => {
                    // Causal: a byte every gap, so never sooner than that
                    // (how many reads it took depends on how busy the reader is).
                    let floor = gap * (bytes.len() as u32 - 1);
                    assert!(took >= floor && reads > 1, "{what}: {} bytes in {took:?}, {reads} reads", bytes.len());
                    // The whole of it: a stream's [DONE], or a whole body's message.
                    let whole = if stream { "[DONE]" } else { "\"message\"" };
                    assert!(text.contains(whole), "{what}");
                }
                Hostile::BrokenChunked => {
                    assert_eq!(ended, Ended::Closed, "{what}");
                    assert!(body.contains("\r\nzz\r\n") && !body.ends_with("0\r\n\r\n"), "{what}: {body}");
                }
                Hostile::DataAfterDone if stream => {
                    let after = &body[body.find("[DONE]").unwrap()..];
                    assert_eq!(after.matches("data: {").count(), 2, "{what}: {after}");
                }
                Hostile::UsageOnly => {
                    assert!(!body.contains("\"content\":\" ") && body.contains("\"completion_tokens\":0"), "{what}");
                }
                Hostile::EventError if stream => assert!(body.contains("event: error\ndata: {"), "{what}: {body}"),
                Hostile::EventError => assert!(body.starts_with("{\"error\":"), "{what}: {body}"),
                Hostile::TooManyRequests | Hostile::Unavailable => {
                    let status = if case == Hostile::TooManyRequests { "429" } else { "503" };
                    assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{what}: {head}");
                    assert!(head.contains("\r\nRetry-After: 1\r\n"), "{what}: {head}");
                }
                Hostile::Html200 => assert!(head.contains("text/html") && body.contains("<html>"), "{what}"),
                Hostile::CloseAfterResponse => {
                    // Keep-alive said, and the connection closed all the same.
                    assert!(!head.contains("Connection: close") && ended == Ended::Closed, "{what}: {head}");
                    assert!(text.contains("[DONE]") == stream, "{what}");
                }
                Hostile::DataAfterDone => assert!(text.contains("\"message\""), "{what}"),
            }
        }
        assert_eq!(s.counters.hostile(case), 2, "{case}: both requests drew it");
        // The server still answers a plain request beside it.
        let mut sock = TcpStream::connect(addr).await.unwrap();
        sock.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n").await.unwrap();
        let r = read_response(&mut sock, &mut Vec::new()).await;
        assert_eq!(r.status, 200, "{case}");
    }
}

/// A scripted answer (`--answers`) that ends at its last word before
/// `max_tokens` ends as a model's does, in each route's words (`stop`,
/// `end_turn`, `eos_token`, `eos`); one `max_tokens` cuts is `length` (or
/// the route's word for it). Every one had said `length`.
#[tokio::test]
async fn a_scripted_answer_that_ends_on_its_own_says_stop_in_each_routes_words() {
    let answers = crate::answers::Answers::from_jsonl(r#"{"prompt":"capital?","reference":"Paris is the capital"}"#);
    let profile = FixedProfile {
        faults: FaultConfig { answers: Some(Arc::new(answers.unwrap())), ..Default::default() },
        ..quick()
    };
    let (addr, _s, _e) = start(profile).await;
    // Each route's body with `max_tokens` (None: the route's own default), and
    // where its finish reason is, whole and in the last event or line.
    type Pick = fn(&Value) -> Option<&str>;
    let openai: Pick = |v| v["choices"][0]["finish_reason"].as_str();
    let messages: Pick = |v| v["stop_reason"].as_str().or(v["delta"]["stop_reason"].as_str());
    let ollama: Pick = |v| v["done_reason"].as_str();
    let tgi: Pick = |v| v["details"]["finish_reason"].as_str();
    let llamacpp: Pick = |v| v["stop_type"].as_str();
    type Body = fn(Option<u32>, bool) -> String;
    let cases: [(&str, Body, Pick, [&str; 2]); 6] = [
        (
            "/v1/chat/completions",
            |m, s| {
                format!(r#"{{{},"stream":{s}{}}}"#, MSGS, m.map_or(String::new(), |m| format!(r#","max_tokens":{m}"#)))
            },
            openai,
            ["stop", "length"],
        ),
        (
            "/v1/completions",
            |m, s| {
                format!(
                    r#"{{"prompt":"capital?","stream":{s}{}}}"#,
                    m.map_or(String::new(), |m| format!(r#","max_tokens":{m}"#))
                )
            },
            openai,
            ["stop", "length"],
        ),
        (
            "/v1/messages",
            |m, s| format!(r#"{{{},"stream":{s},"max_tokens":{}}}"#, MSGS, m.unwrap_or(64)),
            messages,
            ["end_turn", "max_tokens"],
        ),
        (
            "/api/chat",
            |m, s| {
                format!(
                    r#"{{{},"stream":{s}{}}}"#,
                    MSGS,
                    m.map_or(String::new(), |m| format!(r#","options":{{"num_predict":{m}}}"#))
                )
            },
            ollama,
            ["stop", "length"],
        ),
        (
            "/generate",
            |m, _| {
                format!(
                    r#"{{"inputs":"capital?"{}}}"#,
                    m.map_or(String::new(), |m| format!(r#","parameters":{{"max_new_tokens":{m}}}"#))
                )
            },
            tgi,
            ["eos_token", "length"],
        ),
        (
            "/completion",
            |m, s| {
                format!(
                    r#"{{"prompt":"capital?","stream":{s}{}}}"#,
                    m.map_or(String::new(), |m| format!(r#","n_predict":{m}"#))
                )
            },
            llamacpp,
            ["eos", "limit"],
        ),
    ];
    let mut sock = TcpStream::connect(addr).await.unwrap();
    let mut buf = Vec::new();
    for (path, body, pick, [ended, cut]) in cases {
        for (max_tokens, want) in [(None, ended), (Some(2), cut)] {
            for stream in [false, true] {
                let path = if path == "/generate" && stream { "/generate_stream" } else { path };
                sock.write_all(post(path, &body(max_tokens, stream)).as_bytes()).await.unwrap();
                let r = read_response(&mut sock, &mut buf).await;
                assert_eq!(r.status, 200, "{path} {max_tokens:?}: {}", String::from_utf8_lossy(&r.body));
                let last: Value = if !stream {
                    r.json()
                } else if path.starts_with("/api/") {
                    let text = String::from_utf8(r.body.clone()).unwrap();
                    serde_json::from_str(text.lines().last().unwrap()).unwrap()
                } else {
                    // Messages names its events (`event:` before `data:`).
                    let text = String::from_utf8(r.body.clone()).unwrap();
                    let events: Vec<Value> = text
                        .lines()
                        .filter_map(|l| serde_json::from_str(l.strip_prefix("data:")?.trim_start()).ok())
                        .collect();
                    events.into_iter().rev().find(|v| pick(v).is_some()).unwrap_or_else(|| panic!("{path}: {text}"))
                };
                assert_eq!(pick(&last), Some(want), "{path} stream {stream} max_tokens {max_tokens:?}: {last}");
            }
        }
    }
}

const MSGS: &str = r#""messages":[{"role":"user","content":"capital?"}]"#;
