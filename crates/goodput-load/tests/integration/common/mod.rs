//! Helpers shared by the client tests: a fixed-timing server on
//! 127.0.0.1:0 and a client and plan to load it with.
#![allow(dead_code)]

use goodput_core::RequestRecord;
use goodput_load::{Api, BodyOptions, Client, ClientConfig, Control, LengthDist, LoadPlan, Transport, Workload};
use goodput_sim::fixed::{FixedProfile, FixedServer};
use std::sync::Arc;
use std::time::Duration;

pub async fn start(profile: FixedProfile) -> (String, Arc<FixedServer>) {
    serve(FixedServer::new(profile)).await
}

/// Serves `server` on 127.0.0.1:0, on the test's runtime.
pub async fn serve(server: Arc<FixedServer>) -> (String, Arc<FixedServer>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(goodput_sim::fixed::serve(listener, server.clone(), std::future::pending()));
    (url, server)
}

pub fn client(url: &str, api: Api, stream: bool, timeout: Duration) -> Arc<Client> {
    client_over(url, api, stream, timeout, Transport::default())
}

pub fn client_over(url: &str, api: Api, stream: bool, timeout: Duration, transport: Transport) -> Arc<Client> {
    Arc::new(Client::new(config(url, api, stream, timeout, transport), None).unwrap())
}

/// The settings of a test client: the fixed server's model, usage asked
/// for, no key, the default stamps and cap.
pub fn config(url: &str, api: Api, stream: bool, timeout: Duration, transport: Transport) -> ClientConfig {
    ClientConfig {
        base_url: url.into(),
        api_key: None,
        body: BodyOptions { api, model: "goodput-fixed".into(), stream, include_usage: true, ..Default::default() },
        timeout,
        transport,
        stamps: Default::default(),
        key_header: Default::default(),
        headers: Vec::new(),
        cancel: None,
        max_buffer: goodput_load::client::MAX_BUFFER,
    }
}

pub fn workload(output: u32) -> Arc<Workload> {
    Arc::new(Workload::Synthetic {
        input: LengthDist::Fixed(32),
        output: LengthDist::Fixed(output),
        seed: 1,
        tokenizer: None,
        shared_prefix: None,
    })
}

pub fn plan(requests: u64, concurrency: usize) -> LoadPlan {
    LoadPlan {
        requests: Some(requests),
        duration: None,
        warmup: 0,
        warmup_time: std::time::Duration::ZERO,
        concurrency: Some(concurrency),
        rate: None,
        trace: None,
        trace_source: None,
        ramp_up: std::time::Duration::ZERO,
        sessions: None,
        seed: 0,
        grace: Duration::from_secs(1),
        shard: None,
        user_steps: Vec::new(),
        cancel: None,
    }
}

pub async fn run(url: &str, api: Api, stream: bool, output: u32, p: LoadPlan) -> Vec<RequestRecord> {
    let c = client(url, api, stream, Duration::from_secs(10));
    goodput_load::run(&p, c, workload(output), Control::default(), |_: &RequestRecord| {}).await.unwrap().records
}

/// [`run`] by a client that names each request (`X-Request-Id`: its id),
/// as a server's write log records it.
pub async fn run_named(url: &str, api: Api, stream: bool, output: u32, p: LoadPlan) -> Vec<RequestRecord> {
    let mut cfg = config(url, api, stream, Duration::from_secs(10), Transport::default());
    cfg.headers.push(("X-Request-Id".into(), "{request}".into()));
    let c = Arc::new(Client::new(cfg, None).unwrap());
    goodput_load::run(&p, c, workload(output), Control::default(), |_: &RequestRecord| {}).await.unwrap().records
}

/// A write log's first token-chunk write of each request, in ms after the
/// server took the request, by request id (see `FixedServer::logging_writes`).
pub async fn first_writes(log: &std::path::Path, streams: usize) -> std::collections::HashMap<String, f64> {
    // The log's thread writes each stream's line as it ends.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.lines().count() >= streams || std::time::Instant::now() > deadline {
            return goodput_sim::fixed::first_writes_ms(&text).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The recorded llama.cpp chat stream (with usage).
pub fn sse() -> Vec<u8> {
    std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/llamacpp/chat-stream-usage.sse")).unwrap()
}

/// Reads one request (head and Content-Length body); false at end of input.
pub async fn read_request(sock: &mut tokio::net::TcpStream, got: &mut Vec<u8>) -> bool {
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; 65536];
    loop {
        if let Some(h) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..h]).to_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:").map(|v| v.trim().parse().unwrap()))
                .unwrap_or(0);
            if got.len() >= h + 4 + len {
                got.drain(..h + 4 + len);
                return true;
            }
        }
        let n = sock.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return false;
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// A server that answers every request with `response`, as given, then
/// closes the connection.
pub async fn canned(response: Vec<u8>) -> String {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let response = response.clone();
            tokio::spawn(async move {
                if !read_request(&mut sock, &mut Vec::new()).await {
                    return;
                }
                let _ = sock.write_all(&response).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    url
}

/// One request for `max_tokens` of "hello" to `url`, as the client sends it.
pub async fn request_once(
    url: &str,
    transport: Transport,
    api: Api,
    stream: bool,
    max_tokens: u32,
    max_buffer: usize,
    timeout: Duration,
) -> RequestRecord {
    let cfg = ClientConfig { max_buffer, ..config(url, api, stream, timeout, transport) };
    let client = Client::new(cfg, None).unwrap();
    let item = goodput_load::workload::WorkItem {
        prompt: goodput_load::PromptBody::Text("hello".into()),
        intended_input_tokens: None,
        max_tokens: Some(max_tokens),
        session: None,
        reference: Vec::new().into(),
        repeat: None,
        media: Default::default(),
    };
    let origin = tokio::time::Instant::now();
    client.execute(0, &item, Duration::ZERO, origin, &tokio_util::sync::CancellationToken::new()).await
}
