//! Fixture tests: hand-made scrapes of each engine (tests/fixtures/prom) and
//! the recorded llama.cpp scrape (tests/fixtures/llamacpp) mapped to signals.

use super::parse::{parse, ParseErrorKind, Scrape};
use super::signals::{CounterSignal as C, GaugeSignal as G, HistogramSignal as H, Signals, Source};
use std::path::PathBuf;

fn read(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture(name: &str) -> String {
    read(&format!("tests/fixtures/prom/{name}"))
}

fn clean(text: &str) -> Scrape {
    let scrape = parse(text);
    assert!(scrape.errors.is_empty(), "{:?}", scrape.errors);
    scrape
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

#[track_caller]
fn assert_gauges(s: &Signals, want: &[(G, f64)]) {
    for &(g, v) in want {
        let got = s.gauges.get(&g).copied();
        assert!(got.is_some_and(|got| close(got, v)), "{}: {got:?}, want {v}", g.name());
    }
}

#[track_caller]
fn assert_counters(s: &Signals, want: &[(C, f64)]) {
    for &(c, v) in want {
        let got = s.counter_total(c);
        assert!(got.is_some_and(|got| close(got, v)), "{}: {got:?}, want {v}", c.name());
    }
}

#[track_caller]
fn assert_histogram_counts(s: &Signals, want: &[(H, f64)]) {
    for &(h, v) in want {
        let got = s.histogram(h).map(|h| h.count);
        assert_eq!(got, Some(v), "{}", h.name());
    }
}

#[test]
fn vllm_maps_to_common_signals() {
    let s = Signals::from_scrape(&clean(&fixture("vllm.prom")));
    assert_eq!(s.sources, vec![Source::Vllm]);
    // The cache's size from its info metric's labels: 29,070 blocks of 16.
    assert_gauges(
        &s,
        &[
            (G::RunningRequests, 12.0),
            (G::WaitingRequests, 3.0),
            (G::KvCacheUsage, 0.4375),
            (G::KvCacheTokens, 29_070.0 * 16.0),
        ],
    );
    assert_eq!(s.gauges.len(), 4);
    assert_counters(
        &s,
        &[
            (C::PromptTokens, 250_000.0),
            (C::GenerationTokens, 180_000.0),
            (C::PrefixCacheQueries, 250_000.0),
            (C::PrefixCacheHits, 60_000.0),
            (C::Preemptions, 7.0),
            // stop 905 + length 90; the 5 aborted are failures
            (C::RequestsSucceeded, 995.0),
            (C::RequestsFailed, 5.0),
        ],
    );
    assert_histogram_counts(&s, &[(H::Ttft, 1000.0), (H::Itl, 179_000.0), (H::E2e, 1000.0), (H::Queue, 1000.0)]);
    assert!(!s.histograms.contains_key(&H::Tpot));
    let ttft = s.histogram(H::Ttft).unwrap();
    // rank 500 lies 20 of the 320 observations into (0.1, 0.25]
    assert_eq!(ttft.quantile(0.5), Some(0.1 + 0.15 * 20.0 / 320.0));
    // rank 990 is the top of (0.75, 1.0]
    assert_eq!(ttft.quantile(0.99), Some(1.0));
    assert!(close(ttft.mean().unwrap(), 0.1427));

    let unmapped: Vec<&str> = s.unmapped.iter().map(|x| x.name.as_str()).collect();
    for name in ["python_info", "vllm:iteration_tokens_total_bucket"] {
        assert!(unmapped.contains(&name), "{name} not kept raw");
    }
    for name in [
        "vllm:prompt_tokens_created",
        "vllm:time_to_first_token_seconds_created",
        "vllm:num_requests_running",
        "vllm:cache_config_info",
    ] {
        assert!(!unmapped.contains(&name), "{name} wrongly unmapped");
    }
}

#[test]
fn sglang_maps_to_common_signals() {
    let s = Signals::from_scrape(&clean(&fixture("sglang.prom")));
    assert_eq!(s.sources, vec![Source::Sglang]);
    assert_gauges(
        &s,
        &[
            (G::RunningRequests, 162.0),
            (G::WaitingRequests, 2826.0),
            (G::KvCacheUsage, 0.28),
            (G::PrefixCacheHitRateReported, 0.4),
        ],
    );
    assert_counters(
        &s,
        &[
            (C::PromptTokens, 8_128_902.0),
            (C::GenerationTokens, 7_557_572.0),
            (C::PrefixCacheQueries, 8_128_902.0),
            (C::PrefixCacheHits, 3_251_561.0),
            (C::Preemptions, 31.0),
            (C::RequestsSucceeded, 11_008.0),
            (C::RequestsFailed, 12.0),
        ],
    );
    assert_histogram_counts(
        &s,
        &[(H::Ttft, 11_008.0), (H::Itl, 7_400_757.0), (H::E2e, 11_008.0), (H::Queue, 11_008.0)],
    );
    let ttft = s.histogram(H::Ttft).unwrap();
    // rank 5504 lies in (20, 40], between cumulative counts 2513 and 6000
    assert_eq!(ttft.quantile(0.5), Some(20.0 + 20.0 * (5504.0 - 2513.0) / (6000.0 - 2513.0)));
    // the queue histogram's first bucket is le="0.0"
    let queue = s.histogram(H::Queue).unwrap();
    assert_eq!((queue.buckets[0].le, queue.buckets[0].count), (0.0, 0.0));
    assert!(s.unmapped.iter().any(|x| x.name == "sglang:func_latency_seconds_bucket"));
}

#[test]
fn tgi_maps_to_common_signals() {
    let s = Signals::from_scrape(&clean(&fixture("tgi.prom")));
    assert_eq!(s.sources, vec![Source::Tgi]);
    assert_gauges(&s, &[(G::RunningRequests, 8.0), (G::WaitingRequests, 3.0)]);
    assert!(!s.gauges.contains_key(&G::KvCacheUsage));
    assert_counters(
        &s,
        &[
            // TGI's token counts are the sums of its per-request histograms
            (C::PromptTokens, 312_500.0),
            (C::GenerationTokens, 187_345.0),
            (C::RequestsSucceeded, 1000.0),
            (C::RequestsFailed, 10.0),
        ],
    );
    assert!(!s.counters.contains_key(&C::PrefixCacheHits));
    assert_histogram_counts(
        &s,
        &[
            (H::E2e, 1000.0),
            (H::Queue, 1000.0),
            (H::Tpot, 1000.0),
            (H::PrefillBatch, 640.0),
            (H::DecodeBatch, 60_210.0),
        ],
    );
    assert!(!s.histograms.contains_key(&H::Ttft));
    let decode = s.histogram(H::DecodeBatch).unwrap();
    assert_eq!(decode.buckets.len(), 36);
    assert!((0.005..0.02).contains(&decode.quantile(0.5).unwrap()));
}

#[test]
fn dcgm_maps_to_gpu_signals_in_si_units() {
    let s = Signals::from_scrape(&clean(&fixture("dcgm.prom")));
    assert_eq!(s.sources, vec![Source::Dcgm]);
    assert_gauges(
        &s,
        &[
            // percent per GPU, averaged, as a ratio
            (G::GpuUtilization, 0.89),
            // MiB per GPU, summed, in bytes
            (G::GpuMemoryUsed, (72_318.0 + 71_040.0) * 1024.0 * 1024.0),
            (G::GpuPower, 1011.0),
        ],
    );
    // mJ per GPU, summed, in joules
    assert_counters(&s, &[(C::GpuEnergy, (43_200_123_456.0 + 42_900_654_321.0) / 1000.0)]);
    assert!(s.unmapped.iter().any(|x| x.name == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"));
}

#[test]
fn an_engine_and_dcgm_in_one_scrape_set() {
    let s = Signals::from_scrape(&clean(&(fixture("vllm.prom") + &fixture("dcgm.prom"))));
    assert_eq!(s.sources, vec![Source::Vllm, Source::Dcgm]);
    assert_gauges(&s, &[(G::RunningRequests, 12.0), (G::GpuPower, 1011.0)]);
    assert!(s.counters.contains_key(&C::GpuEnergy) && s.counters.contains_key(&C::GenerationTokens));
}

#[test]
fn the_recorded_llamacpp_scrape_is_recognised() {
    let scrape = clean(&read("../goodput-load/tests/fixtures/llamacpp/metrics.prom"));
    let names: Vec<&str> = scrape.families.iter().map(|f| f.name.as_str()).collect();
    assert!(names.contains(&"llamacpp:prompt_tokens_total") && names.contains(&"llamacpp:requests_deferred"));
    let s = Signals::from_scrape(&scrape);
    assert_eq!(s.sources, vec![Source::LlamaCpp]);
    assert_gauges(&s, &[(G::RunningRequests, 0.0), (G::WaitingRequests, 0.0)]);
    // this build has no KV-cache gauge
    assert!(!s.gauges.contains_key(&G::KvCacheUsage));
    assert_counters(
        &s,
        &[
            // 33 computed + 0 reused
            (C::PromptTokens, 33.0),
            (C::GenerationTokens, 80.0),
            (C::PrefixCacheQueries, 33.0),
            (C::PrefixCacheHits, 0.0),
        ],
    );
    let unmapped: Vec<&str> = s.unmapped.iter().map(|x| x.name.as_str()).collect();
    assert!(unmapped.contains(&"llamacpp:n_decode_total") && unmapped.contains(&"llamacpp:n_tokens_max"));
}

#[test]
fn a_malformed_line_keeps_every_other_family() {
    let text = fixture("vllm.prom");
    let broken = text.replacen(
        "vllm:num_requests_waiting{model_name=\"meta-llama/Llama-3.1-8B-Instruct\",engine=\"0\"} 3.0",
        "vllm:num_requests_waiting{model_name=\"meta-llama/Llama-3.1-8B-Instruct\",engine=\"0\" 3.0",
        1,
    );
    assert_ne!(broken, text);
    let (good, bad) = (parse(&text), parse(&broken));
    assert_eq!(bad.errors.len(), 1);
    assert!(matches!(bad.errors[0].kind, ParseErrorKind::Malformed(_)));
    assert_eq!(bad.errors[0].line, 20);
    let names = |s: &Scrape| s.families.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&bad), names(&good));
    for (b, g) in bad.families.iter().zip(&good.families) {
        if b.name != "vllm:num_requests_waiting" {
            assert_eq!(b, g);
        }
    }
    let s = Signals::from_scrape(&bad);
    assert!(!s.gauges.contains_key(&G::WaitingRequests));
    assert_gauges(&s, &[(G::RunningRequests, 12.0), (G::KvCacheUsage, 0.4375)]);
    assert_histogram_counts(&s, &[(H::Ttft, 1000.0)]);
}

#[test]
fn a_duplicated_family_is_reported_and_the_rest_kept() {
    let text = fixture("vllm.prom");
    let again = "# HELP vllm:num_requests_running Number of requests in model execution batches.\n\
                 # TYPE vllm:num_requests_running gauge\n\
                 vllm:num_requests_running{model_name=\"other\",engine=\"0\"} 99.0\n";
    let doubled = parse(&format!("{text}{again}# TYPE tail gauge\ntail 1\n"));
    let good = parse(&text);
    assert_eq!(doubled.errors.len(), 1);
    assert_eq!(doubled.errors[0].kind, ParseErrorKind::DuplicateFamily("vllm:num_requests_running".into()));
    assert_eq!(&doubled.families[..good.families.len()], &good.families[..]);
    assert_eq!(doubled.families.last().unwrap().name, "tail");
    assert_gauges(&Signals::from_scrape(&doubled), &[(G::RunningRequests, 12.0)]);
}

/// Two scrapes ten seconds apart, summarised over them.
fn window_of(first: &str, second: &str) -> super::WindowSummary {
    let (a, b) = (clean(&fixture(first)), clean(&fixture(second)));
    super::summarize(&[(Duration::ZERO, a), (Duration::from_secs(10), b)], Duration::ZERO, Duration::from_secs(10))
}

use std::time::Duration;

#[test]
fn vllm_speculative_decoding_counters_give_acceptance_by_position() {
    let s = Signals::from_scrape(&clean(&fixture("vllm-spec-decode-1.prom")));
    assert_counters(&s, &[(C::SpecDrafts, 3000.0), (C::SpecDraftTokens, 9000.0), (C::SpecAcceptedTokens, 5100.0)]);
    // The per-position counters, summed over positions, are the accepted total.
    assert_counters(&s, &[(C::SpecAcceptedByPosition, 5100.0)]);
    assert!(s.unmapped.is_empty(), "every family is read, the _created ones too: {:?}", s.unmapped);

    let w = window_of("vllm-spec-decode-0.prom", "vllm-spec-decode-1.prom");
    let sd = w.spec_decode.as_ref().expect("a speculating server");
    assert_eq!(sd.basis, "counters");
    // Δaccepted 3300 of Δdrafted 6000; 2000 proposals.
    assert!(close(sd.acceptance_rate.unwrap(), 0.55), "{sd:?}");
    assert!(close(sd.mean_accepted_length.unwrap(), 2.65), "{sd:?}");
    let by: Vec<f64> = sd.acceptance_by_position.clone();
    assert_eq!(by.len(), 3);
    for (got, want) in by.iter().zip([0.85, 0.5, 0.3]) {
        assert!(close(*got, want), "{by:?}");
    }
    // The positions' shares sum to the mean accepted length less the bonus token.
    assert!(close(by.iter().sum::<f64>(), sd.mean_accepted_length.unwrap() - 1.0));
}

/// TensorRT-LLM's own server's Prometheus text (`trtllm-serve` with
/// `return_perf_metrics` and `enable_iter_perf_stats`, at
/// /prometheus/metrics): its queue, KV cache, tokens, per-request
/// latencies and per-position drafts map as the other engines' do.
#[test]
fn trtllm_serve_maps_to_common_signals() {
    let s = Signals::from_scrape(&clean(&fixture("trtllm-serve-1.prom")));
    assert_eq!(s.sources, vec![Source::Trtllm]);
    assert_gauges(
        &s,
        &[
            (G::RunningRequests, 24.0),
            (G::WaitingRequests, 6.0),
            (G::KvCacheUsage, 0.625),
            (G::PrefixCacheHitRateReported, 0.25),
        ],
    );
    assert_counters(
        &s,
        &[
            (C::PromptTokens, 400_000.0),
            (C::GenerationTokens, 100_000.0),
            (C::PrefixCacheQueries, 400_000.0),
            (C::PrefixCacheHits, 80_000.0),
            // stop 150 + length 50; HTTP errors 2 + 1.
            (C::RequestsSucceeded, 200.0),
            (C::RequestsFailed, 3.0),
            // Three positions of 600 drafted, 480 + 360 + 240 accepted;
            // each of the 600 proposals drafted position 0.
            (C::SpecDraftTokens, 1800.0),
            (C::SpecAcceptedTokens, 1080.0),
            (C::SpecDrafts, 600.0),
            // Read by position as vLLM's are, its label ours.
            (C::SpecAcceptedByPosition, 1080.0),
        ],
    );
    assert_histogram_counts(&s, &[(H::Ttft, 200.0), (H::Tpot, 200.0), (H::E2e, 200.0), (H::Queue, 200.0)]);
    // A per-request TPOT, not a per-token ITL.
    assert!(!s.histograms.contains_key(&H::Itl));
    assert!(close(s.histogram(H::Ttft).unwrap().mean().unwrap(), 0.12));
    // Its iteration latency is no signal of ours: kept raw.
    assert!(s.unmapped.iter().any(|x| x.name == "trtllm_iteration_latency_seconds"));
    // Ten seconds on, from half of each total: the window's own rates.
    let w = window_of("trtllm-serve-0.prom", "trtllm-serve-1.prom");
    assert_eq!((w.engine, w.sources.as_slice()), (Some(Source::Trtllm), &[Source::Trtllm][..]));
    let sd = w.spec_decode.as_ref().expect("drafts counted");
    assert!(close(sd.acceptance_rate.unwrap(), 0.6), "{sd:?}");
    // 540 accepted over 300 proposals, the bonus token beside them.
    assert!(close(sd.mean_accepted_length.unwrap(), 2.8), "{sd:?}");
    // By position, over the proposals: 240, 180 and 120 of 300.
    let by = &sd.acceptance_by_position;
    assert!(by.len() == 3 && close(by[0], 0.8) && close(by[1], 0.6) && close(by[2], 0.4), "{by:?}");
    assert!(close(w.prefix_cache_hit_rate.unwrap(), 0.2), "{:?}", w.prefix_cache_hit_rate);
}

#[test]
fn sglang_speculative_and_disaggregation_gauges_map() {
    let s = Signals::from_scrape(&clean(&fixture("sglang-spec-pd.prom")));
    assert_eq!(s.sources, vec![Source::Sglang]);
    assert_gauges(
        &s,
        &[
            (G::SpecAcceptLengthReported, 3.2),
            (G::SpecAcceptRateReported, 0.73),
            (G::PdPrefillWaiting, 2.0),
            (G::PdPrefillTransferring, 1.0),
            (G::PdDecodeWaiting, 4.0),
            (G::PdDecodeTransferring, 3.0),
        ],
    );
    // Milliseconds scaled to seconds: 50 transfers, 600 ms in all.
    let h = s.histogram(H::KvTransfer).expect("the transfer histogram");
    assert_eq!((h.count, h.sum), (50.0, Some(0.6)));
    assert_eq!(h.buckets[3].le, 0.005);
    // SGLang's verify-call counter is not a proposal count: kept raw.
    assert!(s.unmapped.iter().any(|x| x.name == "sglang:spec_verify_calls_total"));

    let w = window_of("sglang-spec-pd.prom", "sglang-spec-pd.prom");
    let sd = w.spec_decode.as_ref().unwrap();
    assert_eq!((sd.basis.as_str(), sd.acceptance_rate, sd.mean_accepted_length), ("gauges", Some(0.73), Some(3.2)));
    assert!(sd.acceptance_by_position.is_empty() && sd.drafts.is_none());
}

#[test]
fn kv_transfer_time_comes_from_vllms_nixl_histogram_and_tritons_counters() {
    let s = Signals::from_scrape(&clean(&fixture("vllm-nixl-1.prom")));
    assert_histogram_counts(&s, &[(H::KvTransfer, 300.0), (H::Ttft, 300.0)]);
    let w = window_of("vllm-nixl-0.prom", "vllm-nixl-1.prom");
    // 6 s of transfers over 200 requests.
    assert!(close(w.kv_transfer_mean_s.unwrap(), 0.03), "{:?}", w.kv_transfer_mean_s);

    let s = Signals::from_scrape(&clean(&fixture("triton-disagg-1.prom")));
    assert_eq!(s.sources, vec![Source::Triton]);
    // Milliseconds counted, seconds kept; the request count apart by its label.
    assert_counters(&s, &[(C::KvTransferTime, 3.6), (C::KvTransferRequests, 300.0)]);
    let w = window_of("triton-disagg-0.prom", "triton-disagg-1.prom");
    assert!(close(w.kv_transfer_mean_s.unwrap(), 0.012), "{:?}", w.kv_transfer_mean_s);
}

#[test]
fn a_disaggregated_deployment_counts_prompts_at_prefill_and_generation_at_decode() {
    // One request of 256 prompt tokens and 5 output tokens: both instances
    // counted the prompt, and the prefill instance its one token.
    let text = "# TYPE vllm:prompt_tokens_total counter\n\
                vllm:prompt_tokens_total{engine=\"0\",role=\"prefill\"} 256\n\
                vllm:prompt_tokens_total{engine=\"1\",role=\"decode\"} 256\n\
                # TYPE vllm:generation_tokens_total counter\n\
                vllm:generation_tokens_total{engine=\"0\",role=\"prefill\"} 1\n\
                vllm:generation_tokens_total{engine=\"1\",role=\"decode\"} 5\n";
    let s = Signals::from_scrape(&clean(text));
    assert_counters(&s, &[(C::PromptTokens, 256.0), (C::GenerationTokens, 5.0)]);
    // Series that say no role are one instance's each, all read.
    let plain = text.replace(",role=\"prefill\"", "").replace(",role=\"decode\"", "");
    let s = Signals::from_scrape(&clean(&plain));
    assert_counters(&s, &[(C::PromptTokens, 512.0), (C::GenerationTokens, 6.0)]);
}

/// Every engine's fixture maps the same parsed keeping only the families a
/// signal reads (what a scraper parses) as parsed whole.
#[test]
fn the_families_a_signal_reads_are_all_kept() {
    use super::parse::{parse_keeping, MAX_METRIC_LINES};
    use super::signals::is_read;
    let names = [
        "vllm.prom",
        "sglang.prom",
        "tgi.prom",
        "dcgm.prom",
        "vllm-spec-decode-1.prom",
        "sglang-spec-pd.prom",
        "vllm-nixl-1.prom",
        "triton-disagg-1.prom",
    ];
    let mut texts: Vec<String> = names.iter().map(|n| fixture(n)).collect();
    texts.push(read("../goodput-load/tests/fixtures/llamacpp/metrics.prom"));
    texts.push(fixture("vllm.prom") + &fixture("dcgm.prom"));
    for text in &texts {
        let (all, kept) = (parse(text), parse_keeping(text, MAX_METRIC_LINES, is_read));
        assert_eq!(Signals::mapped(&kept), Signals::mapped(&all));
        assert_eq!((kept.errors.len(), kept.families.len()), (all.errors.len(), all.families.len()));
        // And fewer samples: those of the process, of Python, of the rest.
        let samples = |s: &Scrape| s.families.iter().map(|f| f.samples.len()).sum::<usize>();
        assert!(samples(&kept) <= samples(&all));
    }
    for name in ["vllm:num_requests_running", "vllm", "DCGM_FI_DEV_GPU_UTIL", "goodput_sim_speed", "nv_gpu_utilization"]
    {
        assert!(is_read(name), "{name}");
    }
    for name in ["process_cpu_seconds_total", "python_gc_objects_collected_total", "http_requests_total", "shard_depth"]
    {
        assert!(!is_read(name), "{name}");
    }
}
