//! Servers that misbehave, over real HTTP on 127.0.0.1:0, on both
//! transports: each failure comes back as the kind it is (issue 22, defect
//! 9), never blamed on the wrong party, nor followed elsewhere, nor read
//! wrong (issue 29).

use crate::common;

use goodput_core::{FailureKind, Outcome, RequestRecord};
use goodput_load::workload::WorkItem;
use goodput_load::{Api, Client, ClientConfig, PromptBody, Transport};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use common::canned;

async fn one_request(url: &str, transport: Transport) -> RequestRecord {
    request_with(url, transport, Api::Chat, true, goodput_load::client::MAX_BUFFER).await
}

async fn request_with(url: &str, transport: Transport, api: Api, stream: bool, max_buffer: usize) -> RequestRecord {
    request_full(url, transport, api, stream, max_buffer, Duration::from_secs(5)).await
}

async fn request_with_timeout(url: &str, transport: Transport, timeout: Duration) -> RequestRecord {
    request_full(url, transport, Api::Chat, true, goodput_load::client::MAX_BUFFER, timeout).await
}

async fn request_full(
    url: &str,
    transport: Transport,
    api: Api,
    stream: bool,
    max_buffer: usize,
    timeout: Duration,
) -> RequestRecord {
    common::request_once(url, transport, api, stream, 4, max_buffer, timeout).await
}

fn failure(r: &RequestRecord) -> (FailureKind, String) {
    match &r.outcome {
        Outcome::Failed { kind, message } => (*kind, message.clone()),
        o => panic!("expected a failure, got {o:?}"),
    }
}

const TRANSPORTS: [Transport; 2] = [Transport::Auto, Transport::Reqwest];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_is_its_own_kind_and_keeps_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached for requests","type":"requests"}}"#;
    let resp = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 7\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let url = canned(resp.into_bytes()).await;
    for t in TRANSPORTS {
        let r = one_request(&url, t).await;
        let (kind, message) = failure(&r);
        assert_eq!(kind, FailureKind::RateLimited, "{t:?}: {message}");
        assert!(message.contains("Rate limit reached"), "{t:?}: {message}");
        assert_eq!((r.http_status, r.retry_after.as_deref()), (Some(429), Some("7")), "{t:?}");
    }
    // A 503 stays a server error, and keeps its Retry-After too.
    let url = canned(
        b"HTTP/1.1 503 Service Unavailable\r\nretry-after: 30\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            .to_vec(),
    )
    .await;
    for t in TRANSPORTS {
        let r = one_request(&url, t).await;
        assert_eq!(failure(&r).0, FailureKind::HttpStatus, "{t:?}");
        assert_eq!(r.retry_after.as_deref(), Some("30"), "{t:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_is_an_invalid_response_naming_its_type() {
    let page = "<html><body>Please log in</body></html>";
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    let url = canned(resp.into_bytes()).await;
    for t in TRANSPORTS {
        let (kind, message) = failure(&one_request(&url, t).await);
        assert_eq!(kind, FailureKind::InvalidResponse, "{t:?}: {message}");
        assert!(message.contains("text/html"), "{t:?}: {message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_inside_a_line_is_truncated() {
    let resp = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: {\"choices\":[{\"del";
    let url = canned(resp.as_bytes().to_vec()).await;
    for t in TRANSPORTS {
        let r = one_request(&url, t).await;
        let (kind, message) = failure(&r);
        assert_eq!(kind, FailureKind::TruncatedStream, "{t:?}: {message}");
        assert_eq!(r.chunks.len(), 1, "{t:?}: the chunk before the cut is kept");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_header_block_is_an_invalid_response() {
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-padding: {}\r\n\r\ndata: [DONE]\n\n",
        "a".repeat(1 << 20)
    );
    let url = canned(resp.into_bytes()).await;
    for t in TRANSPORTS {
        let (kind, message) = failure(&one_request(&url, t).await);
        assert_eq!(kind, FailureKind::InvalidResponse, "{t:?}: {message}");
    }
}

/// A head past 64 KiB in many short lines is the head too large, as one
/// long line is, on goodput's own transport: it had been "not an HTTP/1.x
/// response (too many headers)".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_head_of_many_short_headers_is_too_large_not_unknown() {
    for (lines, line) in [(20_000, "x-a: b".to_owned()), (200, format!("x-a: {}", "b".repeat(1000)))] {
        let headers = vec![line; lines].join("\r\n");
        let resp = format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{headers}\r\n\r\ndata: [DONE]\n\n");
        let url = canned(resp.into_bytes()).await;
        let (kind, message) = failure(&one_request(&url, Transport::Auto).await);
        assert_eq!(kind, FailureKind::InvalidResponse, "{message}");
        assert!(message.contains("the response head is larger than 64 KiB"), "{lines} lines: {message}");
        let (kind, message) = failure(&one_request(&url, Transport::Reqwest).await);
        assert_eq!(kind, FailureKind::InvalidResponse, "reqwest: {message}");
    }
}

/// Every third request is read and then its connection closed without an
/// answer (each on a fresh connection: the server says `close`). Those
/// requests fail as what they were, none is sent again, and the server sees
/// exactly the requests the client sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_dropped_on_a_fresh_connection_fails_and_is_not_sent_again() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let counter = counter.clone();
            tokio::spawn(async move {
                if !common::read_request(&mut sock, &mut Vec::new()).await {
                    return;
                }
                let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
                if n.is_multiple_of(3) {
                    return; // dropped: closed with no answer
                }
                let stream = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                              data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
                              data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
                let _ = sock.write_all(stream.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    for t in TRANSPORTS {
        seen.store(0, Ordering::SeqCst);
        let mut failed = 0;
        for _ in 0..9 {
            let r = one_request(&url, t).await;
            assert_eq!(r.retries, 0, "{t:?}: sent again");
            if let Outcome::Failed { kind, message } = &r.outcome {
                assert_eq!(*kind, FailureKind::Connect, "{t:?}: {message}");
                failed += 1;
            }
        }
        assert_eq!((seen.load(Ordering::SeqCst), failed), (9, 3), "{t:?}: requests the server saw, failures");
    }
}

/// A server that sends `head`, then `a`s without end (a line that never
/// ends), and reports how many bytes it got written before the client hung
/// up.
async fn endless(head: &'static str) -> (String, tokio::sync::mpsc::UnboundedReceiver<usize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let tx = tx.clone();
            tokio::spawn(async move {
                if !common::read_request(&mut sock, &mut Vec::new()).await {
                    return;
                }
                let _ = sock.write_all(head.as_bytes()).await;
                let filler = vec![b'a'; 64 << 10];
                let mut written = 0usize;
                // At most 256 MiB: a client that never stops fails the test
                // on the count, not by filling the machine.
                while written < 256 << 20 {
                    match sock.write_all(&filler).await {
                        Ok(()) => written += filler.len(),
                        Err(_) => break,
                    }
                }
                let _ = tx.send(written);
            });
        }
    });
    (url, rx)
}

/// An SSE line, and an NDJSON line, that never end: the request fails at
/// the cap as an invalid response naming it, and the client stops reading
/// there (the server could write little past it before the client hung up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_never_ends_fails_at_the_cap() {
    let cap = 1 << 20;
    let cases = [
        (Api::Chat, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\ndata: "),
        (
            Api::OllamaChat,
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n{\"message\":\"",
        ),
    ];
    for (api, head) in cases {
        let (url, mut written) = endless(head).await;
        for t in TRANSPORTS {
            let r = request_with(&url, t, api, true, cap).await;
            let (kind, message) = failure(&r);
            assert_eq!(kind, FailureKind::InvalidResponse, "{api:?} {t:?}: {message}");
            assert!(message.contains("1048576 bytes") && message.contains("--max-buffer"), "{message}");
            let n = written.recv().await.unwrap();
            assert!(n < 64 << 20, "{api:?} {t:?}: the server wrote {n} bytes before the client stopped reading");
        }
    }
}

/// A whole (non-streamed) body past the cap fails the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_body_past_the_cap_fails() {
    let body = format!("{{\"choices\":[{{\"message\":{{\"content\":\"{}\"}}}}]}}", "a".repeat(2 << 20));
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let url = canned(resp.into_bytes()).await;
    for t in TRANSPORTS {
        let (kind, message) = failure(&request_with(&url, t, Api::Chat, false, 1 << 20).await);
        assert_eq!(kind, FailureKind::InvalidResponse, "{t:?}: {message}");
        assert!(message.contains("--max-buffer"), "{t:?}: {message}");
        // Under the cap, the same body reads.
        let ok = request_with(&url, t, Api::Chat, false, 4 << 20).await;
        assert_eq!(ok.outcome, Outcome::Success, "{t:?}");
    }
}

/// The rest of the cases the hostile-server table lists: data after
/// `[DONE]` is not read, a stream of usage alone is empty output, broken
/// chunked framing is a broken stream, and a server that accepts and never
/// answers is cut at the timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_remaining_misbehaviours_come_back_as_what_they_are() {
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let a = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    let after_done = format!("{sse}{a}data: [DONE]\n\n{a}{a}");
    let usage_only = format!(
        "{sse}data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":3,\"completion_tokens\":0}}}}\n\ndata: [DONE]\n\n"
    );
    let broken_chunked = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{a}\r\nzz\r\n",
        a.len()
    );
    for t in TRANSPORTS {
        let r = one_request(&canned(after_done.clone().into_bytes()).await, t).await;
        assert_eq!((r.outcome.clone(), r.chunks.len()), (Outcome::Success, 1), "{t:?}: data after [DONE]");
        let r = one_request(&canned(usage_only.clone().into_bytes()).await, t).await;
        assert_eq!(failure(&r).0, FailureKind::EmptyOutput, "{t:?}: usage alone");
        let r = one_request(&canned(broken_chunked.clone().into_bytes()).await, t).await;
        let (kind, message) = failure(&r);
        assert!(
            matches!(kind, FailureKind::TruncatedStream | FailureKind::InvalidResponse),
            "{t:?}: broken chunked framing read as {kind:?}: {message}"
        );
        assert_eq!(r.chunks.len(), 1, "{t:?}: the chunk before the broken framing is kept");
    }
    // Accepts, reads, never answers: cut at the timeout (1 s here).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((sock, _)) = listener.accept().await {
            held.push(sock);
        }
    });
    for t in TRANSPORTS {
        let started = std::time::Instant::now();
        let r = request_with_timeout(&url, t, Duration::from_secs(1)).await;
        assert_eq!(failure(&r).0, FailureKind::Timeout, "{t:?}");
        // Causal: not before the timeout; bounded: it does end.
        assert!(started.elapsed() >= Duration::from_secs(1), "{t:?}");
    }
}

/// A server that counts the requests it gets and answers each with a
/// complete stream: where a redirect points.
async fn counting() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let counter = counter.clone();
            tokio::spawn(async move {
                if !common::read_request(&mut sock, &mut Vec::new()).await {
                    return;
                }
                counter.fetch_add(1, Ordering::SeqCst);
                let stream = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                              data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n\
                              data: [DONE]\n\n";
                let _ = sock.write_all(stream.as_bytes()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, seen)
}

/// A 307, 301 or 302 to another server (issue 29, defect 2): no transport
/// follows it, so the other server never gets the key nor the headers, and
/// the request fails as the status it was, naming where it pointed, with
/// the query of that address masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redirect_to_another_server_is_not_followed() {
    use std::sync::atomic::Ordering;
    let (elsewhere, reached) = counting().await;
    let location = format!("{elsewhere}/v1/chat/completions?token=sk-redirect-secret");
    for status in ["307 Temporary Redirect", "301 Moved Permanently", "302 Found"] {
        let resp =
            format!("HTTP/1.1 {status}\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        let url = canned(resp.into_bytes()).await;
        for t in TRANSPORTS {
            let cfg = ClientConfig {
                api_key: Some("sk-live-0123456789".into()),
                key_header: goodput_load::KeyHeader::XApiKey,
                headers: vec![("X-Team-Secret".into(), "team-value-42".into())],
                ..common::config(&url, Api::Chat, true, Duration::from_secs(5), t)
            };
            let client = Client::new(cfg, None).unwrap();
            let item = WorkItem {
                prompt: PromptBody::Text("hello".into()),
                intended_input_tokens: None,
                max_tokens: Some(4),
                session: None,
                reference: Vec::new().into(),
                repeat: None,
                media: Default::default(),
            };
            let r =
                client.execute(0, &item, Duration::ZERO, tokio::time::Instant::now(), &CancellationToken::new()).await;
            let (kind, message) = failure(&r);
            assert_eq!(kind, FailureKind::HttpStatus, "{status} {t:?}: {message}");
            assert!(message.contains(&format!("{elsewhere}/v1/chat/completions")), "{status} {t:?}: {message}");
            assert!(!message.contains("sk-redirect-secret"), "{status} {t:?}: the query is masked: {message}");
            assert_eq!(r.http_status, Some(status[..3].parse().unwrap()), "{status} {t:?}");
            assert_eq!(reached.load(Ordering::SeqCst), 0, "{status} {t:?}: the other server got a request");
        }
    }
}

/// A server that answers every request with `response` and reports each
/// request's head (its request line and headers).
async fn recording(response: Vec<u8>) -> (String, tokio::sync::mpsc::UnboundedReceiver<String>) {
    use tokio::io::AsyncReadExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else { return };
            let (response, tx) = (response.clone(), tx.clone());
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = tx.send(String::from_utf8_lossy(&got).into_owned());
                let _ = sock.write_all(&response).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    (url, rx)
}

const STREAM_OK: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n\
                         data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n\
                         data: [DONE]\n\n";

/// A `--url` with a query (issue 29, defect 4): the API's path goes before
/// it, as URLs are joined, and the query stays on the end; a fragment,
/// which no server would see, is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_query_stays_on_the_end_of_the_path() {
    let (url, mut heads) = recording(STREAM_OK.as_bytes().to_vec()).await;
    for t in TRANSPORTS {
        for given in [
            format!("{url}/v1?key=qs-secret-77"),
            format!("{url}/?key=qs-secret-77"),
            format!("{url}?key=qs-secret-77"),
        ] {
            let r = request_full(&given, t, Api::Chat, true, goodput_load::client::MAX_BUFFER, Duration::from_secs(5))
                .await;
            assert_eq!(r.outcome, Outcome::Success, "{t:?} {given}");
            let head = heads.recv().await.unwrap();
            let line = head.lines().next().unwrap();
            assert_eq!(line, "POST /v1/chat/completions?key=qs-secret-77 HTTP/1.1", "{t:?} {given}");
        }
    }
    for t in TRANSPORTS {
        let cfg = common::config(&format!("{url}/v1#part"), Api::Chat, true, Duration::from_secs(5), t);
        let e = Client::new(cfg, None).err().expect("a fragment is refused").to_string();
        assert!(e.contains("fragment") && e.contains("%23"), "{t:?}: {e}");
    }
}

/// A stream that opens with a UTF-8 byte order mark (issue 29, defect 6),
/// an SSE one and an NDJSON one, and a whole JSON body with one: the mark
/// is dropped and every chunk read, on both transports (it once swallowed
/// the first event, and with it the TTFT).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leading_byte_order_mark_loses_no_event() {
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let mut chunks = String::from("\u{feff}");
    for c in ["a", "b", "c", "d"] {
        chunks += &format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{c}\"}}}}]}}\n\n");
    }
    chunks += "data: {\"choices\":[{\"delta\":{\"content\":\"e\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let ndjson = "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n\u{feff}\
                  {\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\n\
                  {\"message\":{\"role\":\"assistant\",\"content\":\"b\"},\"done\":true,\"done_reason\":\"stop\"}\n";
    let body = "\u{feff}{\"choices\":[{\"message\":{\"content\":\"abc\"},\"finish_reason\":\"stop\"}]}";
    let whole = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (sse_url, ndjson_url, whole_url) =
        (canned(format!("{sse}{chunks}").into_bytes()).await, canned(ndjson.into()).await, canned(whole.into()).await);
    for t in TRANSPORTS {
        let r = one_request(&sse_url, t).await;
        assert_eq!((r.outcome.clone(), r.chunks.len()), (Outcome::Success, 5), "{t:?}: SSE");
        let r = request_with(&ndjson_url, t, Api::OllamaChat, true, goodput_load::client::MAX_BUFFER).await;
        assert_eq!((r.outcome.clone(), r.chunks.len()), (Outcome::Success, 2), "{t:?}: NDJSON");
        let r = request_with(&whole_url, t, Api::Chat, false, goodput_load::client::MAX_BUFFER).await;
        assert_eq!(r.outcome, Outcome::Success, "{t:?}: a whole body");
    }
}

/// Answers that once all read as `truncated_stream` (issue 29, defect 14)
/// each get the kind and the words of what happened, on both transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_are_not_cut_streams_say_what_they_are() {
    let a = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    let head =
        |extra: &str| format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n{extra}connection: close\r\n\r\n");
    let mut cases: Vec<(String, FailureKind, &str)> = Vec::new();
    for enc in ["gzip", "br", "deflate"] {
        // What a compressed stream would look like: not text.
        let resp = format!("{}\u{1f}\u{8b}\u{8}\u{0}", head(&format!("content-encoding: {enc}\r\n")));
        cases.push((resp, FailureKind::InvalidResponse, if enc == "gzip" { "Content-Encoding: gzip" } else { enc }));
    }
    cases.push((
        "HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n".into(),
        FailureKind::InvalidResponse,
        "204 No Content",
    ));
    cases.push((head("content-length: 0\r\n"), FailureKind::InvalidResponse, "empty"));
    cases.push((head(""), FailureKind::InvalidResponse, "empty"));
    cases.push((
        format!("{}{a}", head(&format!("content-length: {}\r\ncontent-length: {}\r\n", a.len(), a.len() + 40))),
        FailureKind::InvalidResponse,
        "two different Content-Length headers",
    ));
    // Older vLLM's error inside a stream.
    let vllm = "data: {\"object\":\"error\",\"message\":\"The model ran out of KV cache\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}\n\n";
    cases.push((format!("{}{a}{vllm}", head("")), FailureKind::MidStreamError, "The model ran out of KV cache"));
    for (resp, want, words) in cases {
        let url = canned(resp.clone().into_bytes()).await;
        for t in TRANSPORTS {
            let (kind, message) = failure(&one_request(&url, t).await);
            assert_eq!(kind, want, "{t:?} {resp:?}: {message}");
            assert!(message.contains(words), "{t:?} {resp:?}: {message}");
        }
    }
}

/// A stream of each API cut before its end: the truncation names the end
/// that API sends, not OpenAI's `[DONE]` (issue 29, defect 14).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncation_names_the_end_its_api_sends() {
    let sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
    let cases = [
        (
            Api::Messages,
            format!(
                "{sse}event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"a\"}}}}\n\n"
            ),
            "message_stop",
        ),
        (Api::Tgi, format!("{sse}data: {{\"index\":1,\"token\":{{\"id\":1,\"text\":\"a\",\"logprob\":0.0,\"special\":false}},\"generated_text\":null,\"details\":null}}\n\n"), "\"details\""),
        (Api::LlamaCpp, format!("{sse}data: {{\"content\":\"a\",\"stop\":false}}\n\n"), "\"stop\": true"),
        (
            Api::OllamaChat,
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\nconnection: close\r\n\r\n\
             {\"message\":{\"role\":\"assistant\",\"content\":\"a\"},\"done\":false}\n"
                .to_owned(),
            "\"done\": true",
        ),
        (Api::Chat, format!("{sse}data: {{\"choices\":[{{\"delta\":{{\"content\":\"a\"}}}}]}}\n\n"), "[DONE]"),
    ];
    for (api, resp, marker) in cases {
        let url = canned(resp.into_bytes()).await;
        for t in TRANSPORTS {
            let r = request_with(&url, t, api, true, goodput_load::client::MAX_BUFFER).await;
            let (kind, message) = failure(&r);
            assert_eq!(kind, FailureKind::TruncatedStream, "{api:?} {t:?}: {message}");
            assert!(message.contains(marker), "{api:?} {t:?}: {message}");
            if api != Api::Chat {
                assert!(!message.contains("[DONE]"), "{api:?} {t:?}: {message}");
            }
            assert_eq!(r.chunks.len(), 1, "{api:?} {t:?}");
        }
    }
}

/// A server that echoes the key percent-encoded and case-folded (issue 29,
/// defect 15): the record's message masks both forms, on both transports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_echoed_in_another_form_is_masked_in_the_record() {
    let body = r#"{"error":{"message":"key sk%2Dlive%2d0123456789 (header BEARER SK-LIVE-0123456789) is not valid"}}"#;
    let resp = format!(
        "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let url = canned(resp.into_bytes()).await;
    for t in TRANSPORTS {
        let cfg = ClientConfig {
            api_key: Some("sk-live-0123456789".into()),
            ..common::config(&url, Api::Chat, true, Duration::from_secs(5), t)
        };
        let client = Client::new(cfg, None).unwrap();
        let item = WorkItem {
            prompt: PromptBody::Text("hello".into()),
            intended_input_tokens: None,
            max_tokens: Some(4),
            session: None,
            reference: Vec::new().into(),
            repeat: None,
            media: Default::default(),
        };
        let r = client.execute(0, &item, Duration::ZERO, tokio::time::Instant::now(), &CancellationToken::new()).await;
        let (kind, message) = failure(&r);
        assert_eq!(kind, FailureKind::HttpStatus, "{t:?}: {message}");
        assert!(message.ends_with("key *** (header ***) is not valid"), "{t:?}: {message}");
    }
}
