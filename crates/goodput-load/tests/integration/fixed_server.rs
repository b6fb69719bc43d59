//! The client against the fixed-timing server over real HTTP on 127.0.0.1:0:
//! injected faults must come back as failures of the right kind, and every
//! protocol variant as complete records.

use crate::common;

use common::{client, plan, run, start, workload};
use goodput_core::{analyze, AnalysisOptions, FailureKind, Outcome, RequestMetrics, RequestRecord};
use goodput_load::{Api, Control};
use goodput_sim::faults::FaultConfig;
use goodput_sim::fixed::FixedProfile;
use std::sync::atomic::Ordering;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_and_non_streaming_requests() {
    let profile = FixedProfile { ttft: Duration::from_millis(40), itl: Duration::from_millis(5), ..Default::default() };
    let (url, _s) = start(profile).await;
    let recs = run(&url, Api::Completions, true, 10, plan(4, 2)).await;
    assert!(recs.iter().all(|r| r.outcome == Outcome::Success && r.output_tokens == 10 && r.input_tokens == 32));
    let whole = run(&url, Api::Chat, false, 10, plan(4, 2)).await;
    for r in &whole {
        assert_eq!(r.outcome, Outcome::Success);
        assert_eq!((r.chunks.len(), r.output_tokens), (1, 10));
        // The whole body arrives after the last chunk would have: 40 + 4 × 5 ms.
        assert!(r.chunks.at(0).t - r.sent >= Duration::from_millis(60));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_are_failures_of_the_right_kind() {
    let faults =
        FaultConfig { error_rate: 0.2, stream_error_rate: 0.2, disconnect_rate: 0.15, seed: 11, ..Default::default() };
    let profile =
        FixedProfile { ttft: Duration::from_millis(5), itl: Duration::from_millis(1), faults, ..Default::default() };
    let (url, server) = start(profile).await;
    let recs = run(&url, Api::Chat, true, 8, plan(120, 6)).await;
    let count = |k: FailureKind| recs.iter().filter(|r| r.outcome.failure_kind() == Some(k)).count() as u64;
    let c = &server.counters;
    let http = c.http_errors.load(Ordering::Relaxed);
    let stream = c.stream_errors.load(Ordering::Relaxed);
    let disc = c.disconnects.load(Ordering::Relaxed);
    assert!(http > 0 && stream > 0 && disc > 0, "the seed must inject each kind: {http} {stream} {disc}");
    assert_eq!(count(FailureKind::HttpStatus), http);
    assert_eq!(count(FailureKind::MidStreamError), stream);
    assert_eq!(count(FailureKind::TruncatedStream), disc);
    let ok = recs.iter().filter(|r| r.outcome.is_success()).count() as u64;
    assert_eq!(ok + http + stream + disc, 120, "no failure is counted as a success");
    // Output received before a mid-stream failure is kept on the record.
    assert!(recs
        .iter()
        .filter(|r| r.outcome.failure_kind() == Some(FailureKind::MidStreamError))
        .all(|r| !r.chunks.is_empty()));
    let s = analyze(&recs, &AnalysisOptions::default()).summary;
    assert_eq!(s.requests.failed, http + stream + disc);
    assert_eq!(s.requests.errors_by_kind.get("http_status"), Some(&http));
    let http_msg = recs.iter().find_map(|r| match &r.outcome {
        Outcome::Failed { kind: FailureKind::HttpStatus, message } => Some(message.clone()),
        _ => None,
    });
    assert!(http_msg.unwrap().contains("500"), "the status is in the message");
}

/// A server that writes its last bytes and closes at once has the close seen
/// when it comes, not at the request's deadline. The two often reach the
/// stream reader's poll as one event: a short read of the bytes must not be
/// taken for the end of what there is (it once was, and such a request
/// ended as truncated only at its deadline, holding its user the while).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_right_after_the_last_bytes_is_seen_when_it_comes() {
    let faults = FaultConfig { disconnect_rate: 1.0, seed: 3, ..Default::default() };
    let profile =
        FixedProfile { ttft: Duration::from_millis(2), itl: Duration::from_millis(1), faults, ..Default::default() };
    let (url, server) = start(profile).await;
    let timeout = Duration::from_secs(20);
    let c = client(&url, Api::Chat, true, timeout);
    let started = std::time::Instant::now();
    let recs = goodput_load::run(&plan(480, 16), c, workload(8), Control::default(), |_: &RequestRecord| {})
        .await
        .unwrap()
        .records;
    assert_eq!(server.counters.disconnects.load(Ordering::Relaxed), 480);
    for r in &recs {
        assert_eq!(r.outcome.failure_kind(), Some(FailureKind::TruncatedStream), "{:?}", r.outcome);
        assert!(!r.chunks.is_empty(), "the bytes before the close are kept");
        // The server closes a few ms after the send; the deadline is 20 s.
        assert!(r.end - r.sent < timeout / 2, "request {} ended {:?} after its send", r.id, r.end - r.sent);
    }
    assert!(started.elapsed() < timeout, "the run took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_unreachable_servers() {
    let faults = FaultConfig { stall_rate: 1.0, stall: Duration::from_secs(30), ..Default::default() };
    let profile =
        FixedProfile { ttft: Duration::from_millis(5), itl: Duration::from_millis(1), faults, ..Default::default() };
    let (url, _s) = start(profile).await;
    let c = client(&url, Api::Chat, true, Duration::from_millis(300));
    let recs = goodput_load::run(&plan(2, 2), c, workload(8), Control::default(), |_: &RequestRecord| {})
        .await
        .unwrap()
        .records;
    for r in &recs {
        assert_eq!(r.outcome.failure_kind(), Some(FailureKind::Timeout));
        assert!(!r.chunks.is_empty(), "chunks before the stall are kept");
        assert!(r.end - r.sent >= Duration::from_millis(300));
    }

    // A port nobody listens on.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let recs = run(&dead, Api::Chat, true, 8, plan(2, 1)).await;
    assert!(recs.iter().all(|r| r.outcome.failure_kind() == Some(FailureKind::Connect)));
}

/// A server that, like the recorded llama.cpp build, announces keep-alive but
/// closes every connection after one response: a pooled client must not fail
/// the next request on the dead connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_closes_after_each_response() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let sse = common::sse();
    tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            let sse = sse.clone();
            tokio::spawn(async move {
                // Read headers and the body (Content-Length) before answering.
                if !common::read_request(&mut sock, &mut Vec::new()).await {
                    return;
                }
                let mut resp = b"HTTP/1.1 200 OK\r\nServer: llama.cpp\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nKeep-Alive: timeout=5, max=100\r\n\r\n".to_vec();
                for part in sse.chunks(700) {
                    resp.extend_from_slice(format!("{:x}\r\n", part.len()).as_bytes());
                    resp.extend_from_slice(part);
                    resp.extend_from_slice(b"\r\n");
                }
                resp.extend_from_slice(b"0\r\n\r\n");
                let _ = sock.write_all(&resp).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    let recs = run(&url, Api::Chat, true, 24, plan(30, 1)).await;
    let bad: Vec<_> = recs.iter().filter(|r| !r.outcome.is_success()).map(|r| r.outcome.clone()).collect();
    assert!(bad.is_empty(), "{bad:?}");
    assert!(recs.iter().all(|r| r.output_tokens == 24));
}

/// The fixed profile sends a role-only chunk and an empty delta when the
/// request arrives, 40 ms before the first token: goodput's TTFT waits for
/// the token, and `compat.vllm` gives TTFT as vLLM's `bench serve` takes it,
/// at the first payload with a choice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_compat_takes_ttft_at_the_first_choice() {
    let profile = FixedProfile { ttft: Duration::from_millis(40), itl: Duration::from_millis(2), ..Default::default() };
    let (url, _s) = start(profile).await;
    let recs = run(&url, Api::Chat, true, 8, plan(6, 2)).await;
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Success);
        let (ours, vllm) = (r.ttft().unwrap(), r.ttft_vllm().unwrap());
        // Causal: the server's 40 ms bounds ours from below, and the role
        // chunk went out before the first token.
        assert!(ours >= Duration::from_millis(40), "{ours:?}");
        assert!(r.first_choice.is_some() && vllm < ours, "vLLM's {vllm:?} against ours {ours:?}");
    }
    let a = analyze(&recs, &AnalysisOptions::default());
    let (vllm, ours) = (a.vllm.mean_ttft_ms.unwrap(), a.summary.ttft_ms.mean.unwrap());
    assert!(vllm < ours, "compat.vllm.mean_ttft_ms {vllm} against summary's {ours}");
}

/// The quirks server of docs/metrics.md, byte for byte as vLLM 0.33's
/// client meets it: a role-only chunk on arrival (vLLM skips it), an empty
/// keep-alive at 75 ms (vLLM counts it: its TTFT), then 64 tokens two a
/// chunk from 150 ms every 20 ms, a finish chunk with an empty delta (not
/// counted), usage, `[DONE]`. `compat.vllm` reproduces vLLM's ITL: 32 gaps a
/// request, the first from the keep-alive to the first token, so its mean is
/// each request's (last token − keep-alive)/32 and its p99 the long gap;
/// goodput's own ITL leaves that gap out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_compat_itl_counts_the_keep_alive_as_vllm_does() {
    use tokio::io::AsyncWriteExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        loop {
            let (mut sock, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let _ = sock.set_nodelay(true);
                while common::read_request(&mut sock, &mut Vec::new()).await {
                    let arrived = tokio::time::Instant::now();
                    let head =
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        return;
                    }
                    let delta = |d: &str, fin: &str| {
                        format!(r#"{{"choices":[{{"index":0,"delta":{d},"finish_reason":{fin}}}]}}"#)
                    };
                    let mut events = vec![(0, delta(r#"{"role":"assistant","content":""}"#, "null"))];
                    events.push((75, delta(r#"{"content":""}"#, "null")));
                    events.extend((0..32).map(|i| (150 + 20 * i, delta(r#"{"content":"ab"}"#, "null"))));
                    events.push((770, delta("{}", r#""length""#)));
                    let usage =
                        r#"{"choices":[],"usage":{"prompt_tokens":32,"completion_tokens":64,"total_tokens":96}}"#;
                    events.push((770, usage.to_string()));
                    events.push((770, "[DONE]".to_string()));
                    for (at, data) in events {
                        tokio::time::sleep_until(arrived + Duration::from_millis(at)).await;
                        let event = format!("data: {data}\n\n");
                        let framed = format!("{:x}\r\n{event}\r\n", event.len());
                        if sock.write_all(framed.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    if sock.write_all(b"0\r\n\r\n").await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let recs = run(&url, Api::Chat, true, 64, plan(4, 2)).await;
    server.abort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut spans = 0.0;
    for r in &recs {
        assert_eq!((r.outcome.clone(), r.output_tokens, r.chunks.len()), (Outcome::Success, 64, 32));
        // vLLM's TTFT is the keep-alive, which the server sent 75 ms before the first token.
        let (ours, vllm) = (r.ttft().unwrap(), r.ttft_vllm().unwrap());
        assert!(
            ours >= Duration::from_millis(150) && vllm >= Duration::from_millis(75) && vllm < ours,
            "{vllm:?} {ours:?}"
        );
        assert_eq!(r.vllm_edge_gaps().len(), 1, "the keep-alive to the first token, and no gap after the last token");
        spans += ms(r.e2e_vllm().unwrap() - r.ttft_vllm().unwrap());
    }
    let a = analyze(&recs, &AnalysisOptions::default());
    let mean = a.vllm.mean_itl_ms.unwrap();
    assert!((mean - spans / (32.0 * recs.len() as f64)).abs() < 1e-6, "32 gaps a request: {mean} against {spans}");
    // One gap in 32 is the long one (75 ms sent apart), more than 1%: it is the p99.
    let (p99, ours) = (a.vllm.p99_itl_ms.unwrap(), a.summary.chunk_gap_ms.p(99.0).unwrap());
    assert!(p99 > 50.0 && p99 > ours, "vLLM's p99 ITL {p99} against goodput's chunk gap p99 {ours}");
}

/// A client stopped past its deadline (here its one thread blocked, as a
/// stopped or starved process is) while its whole response waited in the
/// socket did not see the server time out: what came is read before a
/// timeout is declared. The server runs on a thread of its own, so it
/// answers while the client cannot read.
#[test]
fn a_response_that_came_while_the_client_was_stalled_is_no_timeout() {
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        rt.block_on(async {
            let profile =
                FixedProfile { ttft: Duration::from_millis(200), itl: Duration::from_millis(1), ..Default::default() };
            let (url, _s) = start(profile).await;
            url_tx.send(url).unwrap();
            let _ = stop_rx.await;
        });
    });
    let url = url_rx.recv().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let recs = rt.block_on(async {
        let c = client(&url, Api::Chat, true, Duration::from_millis(300));
        // Blocks the client's only thread from 50 ms to 850 ms: the answers
        // (their first token at 200 ms, all of them by about 210 ms) come
        // while it cannot read, and its 300 ms deadlines pass.
        let stall = tokio::spawn(async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            std::thread::sleep(Duration::from_millis(800));
        });
        let recs = goodput_load::run(&plan(4, 4), c, workload(8), Control::default(), |_: &RequestRecord| {})
            .await
            .unwrap()
            .records;
        stall.await.unwrap();
        recs
    });
    stop_tx.send(()).unwrap();
    server.join().unwrap();
    for r in &recs {
        assert_eq!((&r.outcome, r.output_tokens), (&Outcome::Success, 8), "{:?}", r.outcome);
    }
}
