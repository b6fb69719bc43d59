//! The acceptance case of the client, in a test binary of its own so that no
//! other test competes for the CPU while it measures: 150 ms to the first
//! output chunk (a role-only chunk and an empty chunk before it), then 2
//! tokens per chunk every 20 ms, 64 tokens.

use crate::common;

use common::{first_writes, plan, run_named, serve};
use goodput_core::{analyze, AnalysisOptions, RequestMetrics, RequestRecord};
use goodput_load::Api;
use goodput_sim::fixed::{FixedProfile, FixedServer};

/// The median of what the client measured as TTFT less what the server's
/// write log says it took, each request's taken from the response head's
/// arrival where that is less: a server late to take a request (a loaded
/// machine) writes its head late by as much, and its log counts from then.
/// The log stamps a write when it returns, which a server preempted just
/// then makes late: on a loaded machine the difference can be below zero.
fn client_share_ms(recs: &[RequestRecord], truth: &std::collections::HashMap<String, f64>) -> f64 {
    let mut shares: Vec<f64> = recs
        .iter()
        .map(|r| {
            let ttft = r.ttft().unwrap().as_secs_f64() * 1e3;
            // Never early: the server waits its 150 ms from the request's
            // arrival before it writes the first token.
            assert!(ttft > 149.0, "request {}: TTFT {ttft:.2} ms under the server's 150", r.id);
            let from_head = (r.chunks.at(0).t - r.first_byte.unwrap()).as_secs_f64() * 1e3;
            let server = truth[&r.id.to_string()];
            (ttft - server).min(from_head - server)
        })
        .collect();
    shares.sort_by(f64::total_cmp);
    shares[shares.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_timings_come_back_as_known_metrics() {
    let dir = tempfile::tempdir().unwrap();
    // A wall-clock measurement on a shared machine: a host stall can spoil one
    // run, so up to three are taken and the first inside the bounds counts; a
    // client that mis-measures misses them every time. The TTFT is held to
    // the server's own log of when it wrote each first token: on a loaded
    // machine the server's writes are late too (by 3 to 6 ms at the median
    // with both cores kept busy), and that is the server's time, which the
    // client is right to report.
    let mut attempts = Vec::new();
    let (recs, a) = loop {
        let log = dir.path().join(format!("writes-{}.jsonl", attempts.len()));
        let (url, _s) = serve(FixedServer::logging_writes(FixedProfile::default(), &log).unwrap()).await;
        let recs = run_named(&url, Api::Chat, true, 64, plan(24, 8)).await;
        let truth = first_writes(&log, 24).await;
        let a = analyze(&recs, &AnalysisOptions::default());
        let s = &a.summary;
        let (ttft, itl, tpot) = (s.ttft_ms.p(50.0).unwrap(), s.itl_ms.p(50.0).unwrap(), s.tpot_ms.p(50.0).unwrap());
        let own = client_share_ms(&recs, &truth);
        attempts.push((ttft, own, itl, tpot));
        let inside = own.abs() < 3.0 && (itl - 10.0).abs() < 1.0 && (tpot - 10.0).abs() < 1.0;
        if inside || attempts.len() == 3 {
            assert!(inside, "(ttft, client's share of it, itl, tpot) p50 of each attempt: {attempts:?}");
            break (recs, a);
        }
    };
    let s = &a.summary;
    assert_eq!((s.requests.completed, s.requests.failed), (24, 0));
    assert!(recs.iter().all(|r| r.output_tokens == 64 && r.chunks.len() == 32));
    assert!(recs.iter().all(|r| r.chunks.iter().all(|c| c.tokens == 2)));
    // vLLM's formula from the same records, on vLLM's stamps: (e2e − ttft)
    // / (n_out − 1), its TTFT at the role-only chunk sent on arrival.
    let vllm_tpot: Vec<f64> = recs
        .iter()
        .map(|r| {
            let first = r.first_choice.expect("a role-only chunk before the first token");
            assert!(first < r.chunks.at(0).t);
            (r.chunks.at(31).t - first).as_secs_f64() * 1e3 / 63.0
        })
        .collect();
    let want = vllm_tpot.iter().sum::<f64>() / vllm_tpot.len() as f64;
    let got = a.vllm.mean_tpot_ms.unwrap();
    assert!((got - want).abs() < 1e-6, "compat mean tpot {got} vs formula {want}");
    // 150 ms of TTFT and 31 gaps of 20 ms over 63 tokens: what vLLM's bench
    // would print here, against goodput's 10 ms.
    assert!((got - 770.0 / 63.0).abs() < 1.0, "compat mean tpot {got}");
    assert!(a.vllm.mean_ttft_ms.unwrap() < 10.0, "vLLM's TTFT is the role chunk's");
    // vLLM's ITL is the raw chunk gap.
    assert!((a.vllm.median_itl_ms.unwrap() - 20.0).abs() < 1.0);
}
