//! goodput's own HTTP/1.1 client (the default for http:// servers) against
//! hand-written servers on 127.0.0.1:0 that frame the recorded llama.cpp
//! stream in each way HTTP/1.1 allows: kept connections are reused, bodies
//! framed by chunks, by Content-Length or by the connection's close all read
//! the same, bytes that trickle in one at a time too, and a server that is not
//! speaking HTTP gives a failure that says so.

use crate::common;

use common::{plan, read_request, sse};
use goodput_core::{FailureKind, Outcome, RequestRecord};
use goodput_load::{Api, BodyOptions, Client, ClientConfig, Control, KeyHeader, Stamps, Transport};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Framing {
    Chunked,
    Length,
    Close,
}

/// A server answering every request with the recorded stream in `framing`,
/// written `piece` bytes at a time; returns its URL and its count of accepted
/// connections.
async fn server(framing: Framing, piece: usize, prefix: &'static [u8]) -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let body = sse();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            sock.set_nodelay(true).unwrap();
            count.fetch_add(1, Ordering::SeqCst);
            let body = body.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                while read_request(&mut sock, &mut got).await {
                    let mut resp = prefix.to_vec();
                    resp.extend_from_slice(
                        b"HTTP/1.1 200 OK\r\nServer: raw-test\r\nContent-Type: text/event-stream\r\n",
                    );
                    match framing {
                        Framing::Chunked => {
                            resp.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                            for part in body.chunks(300) {
                                resp.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                                resp.extend_from_slice(part);
                                resp.extend_from_slice(b"\r\n");
                            }
                            resp.extend_from_slice(b"0\r\n\r\n");
                        }
                        Framing::Length => {
                            resp.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                            resp.extend_from_slice(&body);
                        }
                        Framing::Close => {
                            resp.extend_from_slice(b"Connection: close\r\n\r\n");
                            resp.extend_from_slice(&body);
                        }
                    }
                    for p in resp.chunks(piece) {
                        if sock.write_all(p).await.is_err() {
                            return;
                        }
                    }
                    if framing == Framing::Close {
                        let _ = sock.shutdown().await;
                        return;
                    }
                }
            });
        }
    });
    (url, accepted)
}

fn http1_client(url: &str) -> Arc<Client> {
    http1_client_for(url, Api::Chat, KeyHeader::Bearer)
}

fn http1_client_for(url: &str, api: Api, key_header: KeyHeader) -> Arc<Client> {
    let body = BodyOptions { api, model: "m".into(), stream: true, include_usage: true, ..Default::default() };
    let cfg = ClientConfig {
        base_url: url.into(),
        api_key: Some("sk-test".into()),
        body,
        timeout: Duration::from_secs(10),
        transport: Transport::Auto,
        stamps: Stamps::default(),
        key_header,
        headers: vec![("X-Team".into(), "infra".into()), ("X-Routing".into(), "s-{session}/r-{request}".into())],
        cancel: None,
        max_buffer: goodput_load::client::MAX_BUFFER,
    };
    let c = Client::new(cfg, None).unwrap();
    assert_eq!(c.transport_name(), "goodput http/1.1");
    Arc::new(c)
}

async fn load(c: Arc<Client>, requests: u64, concurrency: usize) -> Vec<RequestRecord> {
    goodput_load::run(&plan(requests, concurrency), c, common::workload(24), Control::default(), |_: &RequestRecord| {})
        .await
        .unwrap()
        .records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_framing_reads_the_same_and_kept_connections_are_reused() {
    let mut seen = Vec::new();
    for framing in [Framing::Chunked, Framing::Length, Framing::Close] {
        let (url, accepted) = server(framing, usize::MAX, b"").await;
        let c = http1_client(&url);
        let recs = load(c.clone(), 6, 2).await;
        for r in &recs {
            assert_eq!(r.outcome, Outcome::Success, "{framing:?}");
            assert_eq!(r.retries, 0, "{framing:?}: no request needed a second try");
            assert_eq!(r.http_status, Some(200));
            assert!(r.first_byte.is_some_and(|t| t >= r.sent));
        }
        assert_eq!(c.server_header().as_deref(), Some("raw-test"));
        let conns = accepted.load(Ordering::SeqCst);
        match framing {
            // Two streams at a time, each connection kept for the next
            // request: never more than two. One when the second request's
            // task first ran after the first request was done (a loaded
            // machine), and took its kept connection.
            Framing::Chunked | Framing::Length => assert!((1..=2).contains(&conns), "{framing:?}: {conns}"),
            Framing::Close => assert_eq!(conns, 6),
        }
        seen.push(recs.iter().map(|r| (r.output_tokens, r.chunks.len())).collect::<Vec<_>>());
    }
    assert!(seen.iter().all(|s| s == &seen[0]), "{seen:?}");
    assert_eq!(seen[0][0].0, 24);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_trickle_in_one_at_a_time() {
    // An interim 100 Continue first, then the response a byte per write.
    let (url, _) = server(Framing::Chunked, 1, b"HTTP/1.1 100 Continue\r\n\r\n").await;
    let recs = load(http1_client(&url), 2, 1).await;
    assert!(recs.iter().all(|r| r.outcome == Outcome::Success && r.output_tokens == 24), "{recs:?}");
}

/// An interim response and the real head in one write, so in one read: the
/// head is read from the buffer, not waited for (it used to hang until the
/// timeout whenever the client read both at once).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interim_response_and_the_head_in_one_read() {
    let (url, _) = server(Framing::Chunked, usize::MAX, b"HTTP/1.1 100 Continue\r\n\r\n").await;
    let recs = load(http1_client(&url), 3, 1).await;
    assert!(recs.iter().all(|r| r.outcome == Outcome::Success && r.output_tokens == 24), "{recs:?}");
}

/// As many interim heads as goodput's client takes (`MAX_INTERIM_HEADS`,
/// of 100, 102 and 103 with a header) before the answer, in one read or a
/// few bytes at a time: the answer is read. One more and the exchange
/// fails as an invalid response naming them (without a cap, a server that
/// sent them without end had held the request past its timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interim_heads_are_taken_up_to_their_cap() {
    let heads: [&[u8]; 3] = [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 102 Processing\r\n\r\n",
        b"HTTP/1.1 103 Early Hints\r\nLink: </s.css>; rel=preload\r\n\r\n",
    ];
    let interim =
        |n: usize| -> &'static [u8] { heads.iter().cycle().take(n).copied().collect::<Vec<_>>().concat().leak() };
    let max = goodput_load::http1::MAX_INTERIM_HEADS;
    for piece in [usize::MAX, 7] {
        let (url, _) = server(Framing::Chunked, piece, interim(max)).await;
        let recs = load(http1_client(&url), 2, 1).await;
        assert!(recs.iter().all(|r| r.outcome == Outcome::Success && r.output_tokens == 24), "{piece}: {recs:?}");
        let (url, _) = server(Framing::Chunked, piece, interim(max + 1)).await;
        let recs = load(http1_client(&url), 1, 1).await;
        match &recs[0].outcome {
            Outcome::Failed { kind: FailureKind::InvalidResponse, message }
                if message.contains(&format!("the server sent {} interim 1xx heads before its answer", max + 1)) => {}
            o => panic!("{piece}: {o:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_http_is_an_invalid_response() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let _ = read_request(&mut sock, &mut Vec::new()).await;
                let _ = sock.write_all(b"SSH-2.0-OpenSSH_9.6\r\n\r\n").await;
            });
        }
    });
    let recs = load(http1_client(&url), 2, 1).await;
    for r in &recs {
        match &r.outcome {
            Outcome::Failed { kind: FailureKind::InvalidResponse, message } => {
                assert!(message.contains("not an HTTP/1.x response"), "{message}")
            }
            o => panic!("{o:?}"),
        }
    }
}

/// Sends one request with a client for `api` to a server that answers 503,
/// and returns the request head the server received, and the record.
async fn one_refused_request(api: Api, key_header: KeyHeader) -> (String, Vec<RequestRecord>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let (mut sock, _) = listener.accept().await.unwrap();
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65536];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = sock.read(&mut buf).await.unwrap();
            got.extend_from_slice(&buf[..n]);
        }
        let _ = sock
            .write_all(
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 29\r\n\r\n{\"error\":{\"message\":\"busy!\"}}",
            )
            .await;
        let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
    });
    let recs = load(http1_client_for(&url, api, key_header), 1, 1).await;
    (rx.await.unwrap(), recs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_carries_its_head_and_body() {
    let (head, recs) = one_refused_request(Api::Chat, KeyHeader::Bearer).await;
    assert!(head.starts_with("POST /v1/chat/completions HTTP/1.1\r\n"), "{head}");
    for h in [
        "Host: 127.0.0.1:",
        "Content-Type: application/json",
        "Accept: text/event-stream",
        "Authorization: Bearer sk-test",
        "X-Team: infra",
        // Outside sessions a request is its own session.
        "X-Routing: s-0/r-0",
    ] {
        assert!(head.contains(h), "{h} in {head}");
    }
    assert!(!head.contains("Anthropic-Version"), "{head}");
    match &recs[0].outcome {
        Outcome::Failed { kind: FailureKind::HttpStatus, message } => {
            assert_eq!(message, "HTTP 503 Service Unavailable: busy!")
        }
        o => panic!("{o:?}"),
    }
}

/// Each native API's path, its own key header and the stream type it accepts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_requests_carry_their_api_s_path_and_headers() {
    // The bearer token by default (vLLM's and SGLang's /v1/messages take it),
    // x-api-key alone when asked (Anthropic's own API refuses a key sent as a bearer token).
    let (head, _) = one_refused_request(Api::Messages, KeyHeader::Bearer).await;
    assert!(head.starts_with("POST /v1/messages HTTP/1.1\r\n"), "{head}");
    for h in ["Accept: text/event-stream", "Authorization: Bearer sk-test", "Anthropic-Version: 2023-06-01"] {
        assert!(head.contains(h), "{h} in {head}");
    }
    assert!(!head.contains("X-Api-Key"), "{head}");
    let (head, _) = one_refused_request(Api::Messages, KeyHeader::XApiKey).await;
    assert!(head.contains("X-Api-Key: sk-test") && !head.contains("Authorization"), "{head}");
    let (head, recs) = one_refused_request(Api::OllamaChat, KeyHeader::Bearer).await;
    assert!(head.starts_with("POST /api/chat HTTP/1.1\r\n"), "{head}");
    assert!(head.contains("Accept: application/x-ndjson"), "{head}");
    assert_eq!(recs[0].outcome.failure_kind(), Some(FailureKind::HttpStatus));
}

/// With kernel receive stamps a chunk keeps the time it arrived even when the
/// client's thread is busy when it does; read stamps take the busy time in.
/// The server (its own thread) sends two chunks 150 ms apart; the client's
/// only thread reads the first, then is blocked from 20 ms to 420 ms. Either
/// way the record tells how long the second chunk waited in the socket.
#[cfg(target_os = "linux")]
#[test]
fn kernel_stamps_keep_arrival_times_through_a_busy_client() {
    // The gap between the two chunks, and the longest a chunk waited in the
    // socket, with the body read by the request's task (`threads` false) or
    // by the stream reader threads.
    let gap = |kernel: bool, threads: bool| -> (Duration, Duration) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut sock, _) = listener.accept().unwrap();
            sock.set_nodelay(true).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = sock.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            let event = |text: &str| {
                let data = format!("data: {{\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n");
                format!("{:x}\r\n{data}\r\n", data.len())
            };
            let _ = sock
                .write_all(format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{}", event("a")).as_bytes());
            std::thread::sleep(Duration::from_millis(150));
            let _ = sock.write_all(format!("{}{}0\r\n\r\n", event("b"), event_done()).as_bytes());
            std::thread::sleep(Duration::from_millis(500));
        });
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let body = BodyOptions { api: Api::Chat, model: "m".into(), stream: true, ..Default::default() };
            let cfg = ClientConfig {
                base_url: url,
                api_key: None,
                body,
                timeout: Duration::from_secs(10),
                transport: Transport::Auto,
                stamps: if kernel { Stamps::Kernel } else { Stamps::Read },
                key_header: Default::default(),
                headers: Vec::new(),
                cancel: None,
                max_buffer: goodput_load::client::MAX_BUFFER,
            };
            let c = Arc::new(Client::new(cfg, None).unwrap().with_stream_threads(threads));
            // Blocks the only thread soon after the request is sent.
            tokio::spawn(async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                std::thread::sleep(Duration::from_millis(400));
            });
            let r = load(c, 1, 1).await.remove(0);
            assert_eq!(r.outcome, Outcome::Success, "{r:?}");
            assert_eq!(r.chunks.len(), 2);
            assert!(r.first_byte.unwrap() <= r.chunks.at(0).t && r.chunks.at(1).t <= r.end);
            (r.chunks.at(1).t - r.chunks.at(0).t, r.read_lag_max.expect("the kernel's receive times"))
        })
    };
    let (kernel, lag) = gap(true, false);
    assert!(kernel >= Duration::from_millis(140) && kernel < Duration::from_millis(200), "kernel stamps: {kernel:?}");
    // The second chunk waited from ~155 ms to ~420 ms in the socket.
    assert!(lag > Duration::from_millis(200) && lag < Duration::from_millis(400), "kernel stamps, lag {lag:?}");
    let (read, lag) = gap(false, false);
    // The second chunk is read only when the thread is free again, ~420 ms in.
    assert!(read > Duration::from_millis(300), "read stamps: {read:?}");
    // Read stamps carry that wait; the record says how long it was.
    assert!(lag > Duration::from_millis(200) && lag < Duration::from_millis(400), "read stamps, lag {lag:?}");
    // Read on a stream reader thread, the chunks are read as they come,
    // whatever the runtime's only thread is doing: both stamps give the
    // server's gap, and no chunk waited long in the socket.
    for kernel in [true, false] {
        let (gap, lag) = gap(kernel, true);
        assert!(
            gap >= Duration::from_millis(140) && gap < Duration::from_millis(300),
            "threads, kernel {kernel}: {gap:?}"
        );
        assert!(lag < Duration::from_millis(100), "threads, kernel {kernel}: lag {lag:?}");
    }
}

#[cfg(target_os = "linux")]
fn event_done() -> String {
    let data = "data: [DONE]\n\n";
    format!("{:x}\r\n{data}\r\n", data.len())
}

/// `Kernel` is refused where it cannot be had; `Auto` (the default) takes
/// kernel stamps where it can and says which it took.
#[test]
fn kernel_stamps_need_our_http_client() {
    let cfg = |url: &str, transport, stamps| ClientConfig {
        base_url: url.into(),
        api_key: None,
        body: BodyOptions::default(),
        timeout: Duration::from_secs(1),
        transport,
        stamps,
        key_header: Default::default(),
        headers: Vec::new(),
        cancel: None,
        max_buffer: goodput_load::client::MAX_BUFFER,
    };
    let err = Client::new(cfg("http://127.0.0.1:9", Transport::Reqwest, Stamps::Kernel), None).err().unwrap();
    assert!(matches!(err, goodput_load::error::ClientError::KernelStamps), "{err}");
    assert!(err.to_string().contains("--stamp kernel needs goodput's own HTTP/1.1 client"), "{err}");
    assert!(Client::new(cfg("https://127.0.0.1:9", Transport::Auto, Stamps::Kernel), None).is_err());
    let kernel = if cfg!(target_os = "linux") { "kernel" } else { "read" };
    if cfg!(target_os = "linux") {
        let c = Client::new(cfg("http://127.0.0.1:9", Transport::Auto, Stamps::Kernel), None).unwrap();
        assert_eq!(c.stamp_name(), "kernel");
    }
    // Auto: kernel stamps through our client where the system gives them, read stamps through reqwest.
    for (url, transport, name) in [
        ("http://127.0.0.1:9", Transport::Auto, kernel),
        ("http://127.0.0.1:9", Transport::Reqwest, "read"),
        ("https://127.0.0.1:9", Transport::Auto, "read"),
    ] {
        let c = Client::new(cfg(url, transport, Stamps::Auto), None).unwrap();
        assert_eq!(c.stamp_name(), name, "{url} {transport:?}");
    }
    let c = Client::new(cfg("http://127.0.0.1:9", Transport::Auto, Stamps::Read), None).unwrap();
    assert_eq!(c.stamp_name(), "read");
}

/// A connection kept from one run serves the next, whose clock has another
/// origin (a sweep's points share one client and its kept connections). Its
/// kernel stamps are on the new run's clock: the first run's clock reads 30 s
/// when it ends (its origin is set 30 s back, as after a long point), the
/// second's a few milliseconds, and each of the second run's records keeps
/// its own times: first byte after the send, chunks in order and apart,
/// TTFT below E2E, all well inside the run's few seconds. Before the fix a
/// kept connection carried the first run's last stamp as a floor, so every
/// read of the second run was stamped 30 s: TTFT = E2E, TPOT 0.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_stamps_on_a_kept_connection_follow_the_next_run_s_clock() {
    use goodput_sim::fixed::FixedProfile;
    let profile = FixedProfile {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(10),
        tokens_per_chunk: 1,
        ..Default::default()
    };
    let (url, _server) = common::start(profile).await;
    let mut cfg = common::config(&url, Api::Chat, true, Duration::from_secs(10), Transport::Auto);
    cfg.stamps = Stamps::Kernel;
    let c = Arc::new(Client::new(cfg, None).unwrap());
    assert_eq!(c.stamp_name(), "kernel");
    let run = |origin: tokio::time::Instant| {
        let c = c.clone();
        async move {
            goodput_load::run_at(
                &plan(2, 1),
                c,
                common::workload(6),
                Control::default(),
                |_: &RequestRecord| {},
                origin,
            )
            .await
            .unwrap()
            .records
        }
    };
    let long_ago = tokio::time::Instant::now().checked_sub(Duration::from_secs(30)).expect("a clock 30 s past");
    for r in run(long_ago).await {
        assert_eq!(r.outcome, Outcome::Success, "{r:?}");
        assert!(r.first_byte.is_some_and(|t| t >= Duration::from_secs(30)), "{r:?}");
    }
    let recs = run(tokio::time::Instant::now()).await;
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Success, "{r:?}");
        assert_eq!(r.retries, 0, "the kept connection served it");
        let first = r.first_byte.expect("a first byte");
        assert!(r.sent <= first && first <= r.end, "first byte {first:?} outside [{:?}, {:?}]", r.sent, r.end);
        assert!(r.end < Duration::from_secs(10), "{r:?}");
        assert_eq!(r.chunks.len(), 6, "one token a chunk: {r:?}");
        let times: Vec<Duration> = (0..r.chunks.len()).map(|i| r.chunks.at(i).t).collect();
        assert!(first <= times[0] && times[5] <= r.end, "chunks {times:?} outside [{first:?}, {:?}]", r.end);
        // The server writes the chunks 10 ms apart: the first and last
        // cannot share a stamp, and TTFT is below E2E.
        assert!(times[5] > times[0], "every chunk stamped alike: {times:?}");
        assert!(times[0] - r.sent < r.end - r.sent, "TTFT = E2E: {times:?}, end {:?}", r.end);
    }
}

/// The answer's hash is the same whether the client keeps its text (here
/// `--keep-text`) or only hashes it a chunk at a time (the default, which
/// keeps no text): every answer is the same recorded stream, written a
/// byte at a time (chunks cut anywhere) or whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_hashed_without_its_text_has_the_kept_texts_hash() {
    use goodput_load::QualityOptions;
    for piece in [1, usize::MAX] {
        let (url, _) = server(Framing::Chunked, piece, b"").await;
        let mut hashes = Vec::new();
        for keep_text in [true, false] {
            let c = Arc::try_unwrap(http1_client(&url)).ok().unwrap();
            let c = Arc::new(c.with_quality(QualityOptions { keep_text, ..Default::default() }));
            for r in load(c, 3, 3).await {
                assert_eq!(r.outcome, Outcome::Success);
                assert_eq!(r.output_text.is_some(), keep_text);
                if let Some(text) = &r.output_text {
                    assert!(!text.is_empty());
                    assert_eq!(r.output_hash, Some(goodput_core::util::hash::text_hash(text)));
                }
                hashes.push(r.output_hash.expect("every answer is hashed"));
            }
        }
        assert!(hashes.iter().all(|h| h == &hashes[0]), "kept or not, the same hash: {hashes:?}");
    }
}
