//! The acceptance case of the client, in a test binary of its own so that no
//! other test competes for the CPU while it measures: 150 ms to the first
//! output chunk (a role-only chunk and an empty chunk before it), then 2
//! tokens per chunk every 20 ms, 64 tokens.

mod common;

use common::{plan, run, start};
use goodput_core::{analyze, AnalysisOptions};
use goodput_load::Api;
use goodput_sim::fixed::FixedProfile;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn known_timings_come_back_as_known_metrics() {
    let (url, _s) = start(FixedProfile::default()).await;
    let recs = run(&url, Api::Chat, true, 64, plan(24, 8)).await;
    let a = analyze(&recs, &AnalysisOptions::default());
    let s = &a.summary;
    assert_eq!((s.requests.completed, s.requests.failed), (24, 0));
    let ttft = s.ttft_ms.p(50.0).unwrap();
    let itl = s.itl_ms.p(50.0).unwrap();
    let tpot = s.tpot_ms.p(50.0).unwrap();
    assert!((ttft - 150.0).abs() < 3.0, "ttft p50 {ttft}");
    assert!((itl - 10.0).abs() < 1.0, "itl p50 {itl}");
    assert!((tpot - 10.0).abs() < 1.0, "tpot p50 {tpot}");
    assert!(recs.iter().all(|r| r.output_tokens == 64 && r.chunks.len() == 32));
    assert!(recs.iter().all(|r| r.chunks.iter().all(|c| c.tokens == 2)));
    // vLLM's formula from the same records: (e2e − ttft)/(n_out − 1).
    let vllm_tpot: Vec<f64> = recs
        .iter()
        .map(|r| {
            let (first, last) = (r.chunks[0].t - r.sent, r.chunks[31].t - r.sent);
            (last - first).as_secs_f64() * 1e3 / 63.0
        })
        .collect();
    let want = vllm_tpot.iter().sum::<f64>() / vllm_tpot.len() as f64;
    let got = a.vllm.mean_tpot_ms.unwrap();
    assert!((got - want).abs() < 1.0, "compat mean tpot {got} vs formula {want}");
    assert!((got - 620.0 / 63.0).abs() < 1.0, "compat mean tpot {got}");
    // vLLM's ITL is the raw chunk gap.
    assert!((a.vllm.median_itl_ms.unwrap() - 20.0).abs() < 1.0);
}
