//! The engine server's /metrics read by goodput's own scraper: scraped over
//! real HTTP mid-run and after, parsed by `goodput_core::prometheus::scrape`, and mapped
//! to the common signals, which must equal the engine's true state.

use goodput_core::prometheus::scrape::{parse, CounterSignal, GaugeSignal, HistogramSignal, Signals, Source};
use goodput_sim::engine::{EngineConfig, EngineStats, Precision};
use goodput_sim::engine_server::{app, EngineServer, EngineServerConfig};
use std::time::Duration;
use tokio::time::Instant;

fn words(n: usize, salt: &str) -> String {
    (0..n).map(|i| format!("{salt}{i}")).collect::<Vec<_>>().join(" ")
}

async fn scrape(http: &reqwest::Client, base: &str) -> Signals {
    let resp = http.get(format!("{base}/metrics")).send().await.unwrap();
    assert!(resp.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    let scrape = parse(&resp.text().await.unwrap());
    assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
    let signals = Signals::from_scrape(&scrape);
    // Every vLLM family exposed maps to a signal: the names are the ones the
    // scraper knows. vLLM's tokens per step is kept raw, as a real vLLM's is
    // (it counts tokens, where the histogram signals are times).
    let unmapped: Vec<&str> = signals
        .unmapped
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| n.starts_with("vllm:") && !n.starts_with("vllm:iteration_tokens_total"))
        .collect();
    assert!(unmapped.is_empty(), "{unmapped:?}");
    assert!(signals.unmapped.iter().any(|s| s.name == "vllm:iteration_tokens_total_count"), "kept raw");
    signals
}

/// The engine server of `engine` at `speed` on a loopback port: it, its
/// base URL, what stops it, and a client of it.
async fn serve(
    engine: EngineConfig,
    speed: f64,
) -> (std::sync::Arc<EngineServer>, String, tokio::sync::oneshot::Sender<()>, reqwest::Client) {
    let server = EngineServer::start(EngineServerConfig { speed, ..EngineServerConfig::new(engine) }).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(goodput_sim::server::serve(listener, app(server.clone()), async {
        let _ = stopped.await;
    }));
    #[allow(clippy::disallowed_methods)] // A test's own client of the simulator.
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    (server, base, stop, http)
}

async fn wait_for(server: &EngineServer, what: &str, f: impl Fn(&EngineStats) -> bool) {
    let t0 = Instant::now();
    while !f(&server.stats()) {
        assert!(t0.elapsed() < Duration::from_secs(10), "timed out waiting for {what}: {:?}", server.stats());
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scraped_signals_match_the_engines_true_state() {
    let mut engine = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
    // Two sequences at most, so a queue forms and stays.
    engine.max_num_seqs = Some(2);
    let (server, base, stop, http) = serve(engine, 10.0).await;
    let post = |body: String| {
        http.post(format!("{base}/v1/completions")).header("content-type", "application/json").body(body)
    };

    // Two finished requests sharing a 160-word prefix: 10 cached blocks.
    let shared = words(160, "p");
    for tail in ["a", "b"] {
        let body = serde_json::json!({"prompt": format!("{shared} {}", words(40, tail)), "max_tokens": 4});
        assert_eq!(post(body.to_string()).send().await.unwrap().status(), 200);
    }
    // Five long streams: two run, three wait behind the sequence cap.
    let mut streams = Vec::new();
    for i in 0..5 {
        let body = serde_json::json!({"prompt": words(64, &format!("s{i}-")), "max_tokens": 20_000, "stream": true});
        streams.push(post(body.to_string()).send().await.unwrap());
    }
    wait_for(&server, "two running, three waiting", |s| {
        s.running == 2 && s.waiting == 3 && s.generation_tokens >= 8 + 2 * 5
    })
    .await;

    let before = server.stats();
    let signals = scrape(&http, &base).await;
    let after = server.stats();
    // vLLM's metrics, and the GPUs' energy counters in DCGM's names.
    assert_eq!(signals.sources, vec![Source::Vllm, Source::Dcgm]);
    let gauge = |g| signals.gauges.get(&g).copied().unwrap_or_else(|| panic!("no {g:?}"));
    let counter = |c| signals.counter_total(c).unwrap_or_else(|| panic!("no {c:?}"));
    assert_eq!((gauge(GaugeSignal::RunningRequests), gauge(GaugeSignal::WaitingRequests)), (2.0, 3.0));
    // Running requests only grow their caches meanwhile.
    let kv = gauge(GaugeSignal::KvCacheUsage);
    assert!(kv > 0.0 && before.kv_usage <= kv && kv <= after.kv_usage, "{kv} not in {before:?}..{after:?}");
    // Nothing is admitted while the queue is capped, so lookups stand still.
    assert_eq!(before.prefix_cache_queries, after.prefix_cache_queries);
    assert_eq!(counter(CounterSignal::PrefixCacheQueries), after.prefix_cache_queries as f64);
    assert_eq!(counter(CounterSignal::PrefixCacheHits), after.prefix_cache_hits as f64);
    assert_eq!(after.prefix_cache_hits, 160);
    // Each prompt behind the model's BOS: 201 and 65 tokens.
    assert_eq!(after.prefix_cache_queries, 2 * 201 + 2 * 65);
    assert_eq!(counter(CounterSignal::PromptTokens), after.prompt_tokens as f64);
    let generated = counter(CounterSignal::GenerationTokens);
    assert!(before.generation_tokens as f64 <= generated && generated <= after.generation_tokens as f64);
    assert_eq!(counter(CounterSignal::Preemptions), 0.0);
    assert_eq!(counter(CounterSignal::RequestsSucceeded), 2.0);
    assert_eq!(counter(CounterSignal::RequestsFailed), 0.0);
    let hist = |h| signals.histogram(h).unwrap_or_else(|| panic!("no {h:?}"));
    assert_eq!((hist(HistogramSignal::E2e).count, hist(HistogramSignal::Queue).count), (2.0, 2.0));
    assert_eq!(hist(HistogramSignal::Ttft).count, 4.0);
    assert!(hist(HistogramSignal::Itl).count >= 2.0 * 3.0 + 2.0 * 4.0);
    // Latencies are wall seconds: at 10× a lone first token takes a few ms.
    let ttft_mean = hist(HistogramSignal::Ttft).mean().unwrap();
    assert!(ttft_mean > 0.001 && ttft_mean < 0.1, "{ttft_mean}");

    // The clients leave: every stream is aborted and the engine empties.
    drop(streams);
    wait_for(&server, "the aborts", |s| s.requests_aborted == 5).await;
    let signals = scrape(&http, &base).await;
    let gauge = |g| signals.gauges.get(&g).copied().unwrap();
    assert_eq!(
        (gauge(GaugeSignal::RunningRequests), gauge(GaugeSignal::WaitingRequests), gauge(GaugeSignal::KvCacheUsage)),
        (0.0, 0.0, 0.0)
    );
    assert_eq!(signals.counter_total(CounterSignal::RequestsFailed), Some(5.0));
    assert_eq!(signals.counter_total(CounterSignal::GenerationTokens), Some(server.stats().generation_tokens as f64));
    let _ = stop.send(());
}

/// SGLang's order on the live server (`--pd 1:1 --scheduler sglang`): the
/// decode instance reserves for a request before the prefill instance
/// takes it, so with a decode cache of 4,096 tokens and twelve long
/// streams, a few are prefilled and the rest wait unprefilled (vLLM's order
/// prefills all twelve at once, their prompts fitting the prefill cache).
/// Clients that leave in any state (waiting for a reservation, reserved
/// and being prefilled, running, retracted to the host) leave both
/// instances empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglangs_decode_instance_reserves_before_the_prefill_on_the_live_server() {
    use goodput_sim::engine::{Disaggregation, SchedulerPolicy};
    let mut engine = EngineConfig::from_names("llama-3.1-8b", "h100", Precision::Bf16).unwrap();
    engine.pd = Some(Disaggregation::parse("1:1").unwrap());
    engine.scheduler = SchedulerPolicy::Sglang;
    engine.num_gpu_blocks_override = Some(256);
    let (server, base, stop, http) = serve(engine, 1.0).await;
    // Sent at once: a stream's headers come with its first token, which
    // the later ones wait for.
    let mut streams = Vec::new();
    for i in 0..12 {
        let body = serde_json::json!({"prompt": words(64, &format!("s{i}-")), "max_tokens": 1000, "stream": true});
        let req = http.post(format!("{base}/v1/completions")).header("content-type", "application/json");
        let req = req.body(body.to_string());
        streams.push(tokio::spawn(async move {
            let resp = req.send().await.unwrap();
            // Held open until the test aborts the task: the client leaves.
            std::future::pending::<()>().await;
            drop(resp);
        }));
    }
    // The decode instance runs what it reserved for; the prefill instance
    // has taken only those. At real speed nothing ends for some 7 s (1,000
    // decode steps), so a late look finds the same.
    let t0 = Instant::now();
    let (prefill, decode) = loop {
        let stats = server.replica_stats();
        if stats[1].generation_tokens >= 200 {
            break (stats[0].clone(), stats[1].clone());
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "the decode instance did not run: {stats:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    assert!(
        prefill.requests_admitted >= 5 && prefill.requests_admitted < 12,
        "prefilled {} of 12, decoding {}: {prefill:?} {decode:?}",
        prefill.requests_admitted,
        decode.running
    );
    assert!(decode.running >= 1 && u64::from(decode.running) <= prefill.requests_admitted);
    for s in &streams {
        s.abort();
    }
    let t0 = Instant::now();
    loop {
        let stats = server.replica_stats();
        let empty = stats.iter().all(|s| s.running == 0 && s.waiting == 0 && s.kv_usage == 0.0);
        if empty {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(10), "the instances kept something: {stats:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let _ = stop.send(());
}
