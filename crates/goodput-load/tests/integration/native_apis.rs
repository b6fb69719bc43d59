//! The native APIs (Anthropic Messages, Ollama's /api/chat and
//! /api/generate, TGI's /generate_stream and /generate, llama.cpp's
//! /completion) against the fixed-timing server over real HTTP on
//! 127.0.0.1:0, on both transports: complete records with the server's
//! counts and timings, and injected faults as failures of the right kind.

use crate::common;

use common::{client_over, plan, start, workload};
use goodput_core::{Channel, CountSource, FailureKind, Outcome, RequestMetrics, RequestRecord};
use goodput_load::{Api, Control, Transport};
use goodput_sim::faults::FaultConfig;
use goodput_sim::fixed::FixedProfile;
use std::sync::atomic::Ordering;
use std::time::Duration;

const NATIVE: [Api; 5] = [Api::Messages, Api::OllamaChat, Api::OllamaGenerate, Api::Tgi, Api::LlamaCpp];

async fn run_over(url: &str, api: Api, stream: bool, transport: Transport, requests: u64) -> Vec<RequestRecord> {
    let c = client_over(url, api, stream, Duration::from_secs(10), transport);
    goodput_load::run(&plan(requests, 3), c, workload(10), Control::default(), |_: &RequestRecord| {})
        .await
        .unwrap()
        .records
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_apis_give_complete_records_on_both_transports() {
    let profile = FixedProfile {
        ttft: Duration::from_millis(30),
        itl: Duration::from_millis(3),
        tokens_per_chunk: 2,
        ..Default::default()
    };
    let (url, _s) = start(profile).await;
    for api in NATIVE {
        let finish = match api {
            Api::Messages => "max_tokens",
            Api::LlamaCpp => "limit",
            _ => "length",
        };
        for transport in [Transport::Auto, Transport::Reqwest] {
            let what = format!("{api:?} over {transport:?}");
            let recs = run_over(&url, api, true, transport, 6).await;
            for r in &recs {
                assert_eq!(r.outcome, Outcome::Success, "{what}");
                assert_eq!((r.output_tokens, r.output_tokens_source), (10, CountSource::Usage), "{what}");
                assert_eq!((r.input_tokens, r.input_tokens_source), (32, CountSource::Usage), "{what}");
                assert_eq!(r.finish_reason.as_deref(), Some(finish), "{what}");
                // 10 tokens, 2 a chunk: 5 output chunks, and nothing else counted as output.
                assert_eq!(r.chunks.len(), 5, "{what}");
                assert!(r.chunks.iter().all(|c| c.tokens == 2 && c.channel == Channel::Content), "{what}");
                // Lower bounds only (the server sends no earlier; a busy
                // machine may read later): the first chunk at 30 ms, the last
                // 4 × 3 ms after it.
                assert!(r.ttft().unwrap() >= Duration::from_millis(30), "{what}: {:?}", r.ttft());
                let last = r.chunks.at(4).t - r.sent;
                assert!(last >= Duration::from_millis(42), "{what}: the last chunk {last:?} after the send");
            }
            let whole = run_over(&url, api, false, transport, 3).await;
            for r in &whole {
                assert_eq!(r.outcome, Outcome::Success, "{what}, not streamed");
                assert_eq!((r.chunks.len(), r.output_tokens), (1, 10), "{what}, not streamed");
                assert_eq!(r.finish_reason.as_deref(), Some(finish));
                // The whole body comes when the last chunk would have: 30 + 4 × 3 ms.
                assert!(r.chunks.at(0).t - r.sent >= Duration::from_millis(42), "{what}, not streamed");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_faults_are_failures_of_the_right_kind() {
    for api in NATIVE {
        let faults = FaultConfig {
            error_rate: 0.2,
            stream_error_rate: 0.2,
            disconnect_rate: 0.15,
            seed: 11,
            ..Default::default()
        };
        let profile = FixedProfile {
            ttft: Duration::from_millis(5),
            itl: Duration::from_millis(1),
            faults,
            ..Default::default()
        };
        let (url, server) = start(profile).await;
        let recs = run_over(&url, api, true, Transport::Auto, 60).await;
        let count = |k: FailureKind| recs.iter().filter(|r| r.outcome.failure_kind() == Some(k)).count() as u64;
        let c = &server.counters;
        let http = c.http_errors.load(Ordering::Relaxed);
        let stream = c.stream_errors.load(Ordering::Relaxed);
        let disc = c.disconnects.load(Ordering::Relaxed);
        assert!(http > 0 && stream > 0 && disc > 0, "{api:?}: the seed must inject each kind: {http} {stream} {disc}");
        assert_eq!(count(FailureKind::HttpStatus), http, "{api:?}");
        assert_eq!(count(FailureKind::MidStreamError), stream, "{api:?}");
        assert_eq!(count(FailureKind::TruncatedStream), disc, "{api:?}");
        let ok = recs.iter().filter(|r| r.outcome.is_success()).count() as u64;
        assert_eq!(ok + http + stream + disc, 60, "{api:?}: no failure is counted as a success");
        // The server's own message, read from the API's own error shape.
        for r in &recs {
            if let Outcome::Failed { kind: FailureKind::HttpStatus | FailureKind::MidStreamError, message } = &r.outcome
            {
                assert!(message.contains("injected fault"), "{api:?}: {message}");
            }
        }
    }
}
