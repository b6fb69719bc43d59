//! Result documents for the exporter tests: runs built from synthetic,
//! deterministic records through goodput-core's own analysis, a sweep of
//! them at rising load, a run beside the scraped metrics of a synthetic
//! vLLM server, an estimate with its engine block, adversarial runs
//! whose strings try to break out of every format, and a plan's frontier.
#![allow(dead_code)]

use goodput_core::analysis::cost::CostConfig;
use goodput_core::doc::record::{Channel, ChunkTokenSource, CountSource, FailureKind, OutputChunk};
use goodput_core::doc::sweep::{analyze_sweep, Load, SweepPoint, SweepResult, DEFAULT_ATTAINMENT_TARGET};
use goodput_core::{
    analyze, AnalysisOptions, Compat, Outcome, RequestMetrics, RequestRecord, RunResult, Target, Tool, SCHEMA,
};
use serde_json::json;
use std::time::Duration;

pub const XSS_MODEL: &str = "<script>alert(1)</script>";
pub const FORMULA_MESSAGE: &str = "\"=cmd|' /C calc'!A0\", <b>x</b>";
/// The same payload without the quotes: a spreadsheet would run it.
pub const BARE_FORMULA: &str = "=cmd|' /C calc'!A0";
/// Executes, if it ever becomes markup, by marking the page.
pub const PWN_MESSAGE: &str =
    "</script><!--<img src=x onerror=\"document.body.setAttribute('data-pwned','1')\">\n\x1b[31mred";

/// A small deterministic generator (xorshift64*), so fixtures need no crate.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How a synthetic closed-loop run behaves.
#[derive(Debug, Clone, Copy)]
pub struct Profile {
    pub requests: u64,
    pub concurrency: u64,
    pub ttft_ms: f64,
    pub itl_ms: f64,
    pub output_tokens: u64,
    /// Every n-th request fails mid-stream (0: none).
    pub fail_every: u64,
    pub seed: u64,
}

impl Default for Profile {
    fn default() -> Self {
        Profile { requests: 60, concurrency: 4, ttft_ms: 50.0, itl_ms: 5.0, output_tokens: 32, fail_every: 0, seed: 1 }
    }
}

fn ns(ms: f64) -> Duration {
    Duration::from_nanos((ms * 1e6).round() as u64)
}

/// Closed-loop records: each of `concurrency` users sends its next request
/// when the last one ends; TTFT and ITL jitter around the profile's values.
pub fn records(p: Profile) -> Vec<RequestRecord> {
    let mut rng = Rng::new(p.seed);
    let mut free_at = vec![0.0f64; p.concurrency.max(1) as usize];
    let mut out = Vec::new();
    for id in 0..p.requests {
        let user = (0..free_at.len()).min_by(|&a, &b| free_at[a].total_cmp(&free_at[b])).unwrap();
        let sent = free_at[user] + 0.3;
        let mut r = RequestRecord::new(id, ns(sent - 0.2), ns(sent));
        r.first_byte = Some(ns(sent + 1.0 + rng.next()));
        let ttft = p.ttft_ms * (0.85 + 0.3 * rng.next() + 0.4 * rng.next().powi(8));
        let mut t = sent + ttft;
        let mut left = p.output_tokens;
        while left > 0 {
            let k = if left >= 2 && rng.next() < 0.3 { 2 } else { 1 };
            r.chunks.push(OutputChunk { t: ns(t), tokens: k as u32, channel: Channel::Content });
            left -= k;
            t += p.itl_ms * k as f64 * (0.8 + 0.4 * rng.next());
        }
        let last = r.chunks.last().unwrap().t;
        r.stream_end = Some(last + ns(0.1));
        r.end = last + ns(0.2);
        r.input_tokens = 256;
        r.input_tokens_source = CountSource::Usage;
        r.output_tokens = p.output_tokens;
        r.output_tokens_source = CountSource::Usage;
        r.chunk_tokens_source = ChunkTokenSource::ContinuousUsage;
        r.counts.usage_prompt = Some(256);
        r.counts.usage_completion = Some(p.output_tokens);
        r.counts.requested_completion = Some(p.output_tokens);
        r.counts.chunks = r.chunks.len() as u64;
        r.http_status = Some(200);
        r.finish_reason = Some("length".into());
        r.outcome = Outcome::Success;
        if p.fail_every > 0 && id % p.fail_every == p.fail_every - 1 {
            r.chunks.truncate(3);
            r.output_tokens = r.chunks.iter().map(|c| c.tokens as u64).sum();
            r.end = r.chunks.last().unwrap().t + ns(1.0);
            r.finish_reason = None;
            r.outcome =
                Outcome::Failed { kind: FailureKind::MidStreamError, message: "upstream overloaded, retry".into() };
        }
        free_at[user] = r.end.as_secs_f64() * 1e3;
        out.push(r);
    }
    out
}

/// A run document from records, analysed exactly as `bench` would.
pub fn run_of(model: &str, p: Profile, recs: Vec<RequestRecord>, slo: Option<&str>, with_requests: bool) -> RunResult {
    let opts = AnalysisOptions {
        slo: slo.map(|s| s.parse().unwrap()),
        cost: Some(CostConfig { gpu_hour_usd: 3.0, gpus: 1 }),
        ..Default::default()
    };
    let a = analyze(&recs, &opts);
    RunResult {
        run_id: String::new(),
        schema: SCHEMA.into(),
        tool: Tool { name: "goodput".into(), version: "0.1.0".into(), commit: None },
        kind: "bench".into(),
        started_unix_s: 1_767_225_600.0,
        interrupted: false,
        stop: None,
        config: serde_json::from_value(json!({
            "client": {"api": "chat", "model": model, "stream": true, "url": "http://127.0.0.1:8000"},
            "load": {"concurrency": p.concurrency, "requests": p.requests, "warmup": 0},
            "workload": {"input_tokens": "256", "output_tokens": p.output_tokens.to_string()},
            "slo": slo,
        }))
        .expect("a config"),
        target: Target {
            url: "http://127.0.0.1:8000".into(),
            model: model.into(),
            api: "chat".into(),
            embedded: false,
            server: Some("vllm".into()),
        },
        window: a.window,
        summary: a.summary,
        slo: a.slo,
        cost: a.cost,
        energy: None,
        compat: Compat { vllm: a.vllm },
        engine: None,
        server_signals: None,
        client: None,
        client_stalls: None,
        warnings: a.warnings,
        diagnosis: Vec::new(),
        shard: None,
        merge: None,
        repeats: None,
        requests: with_requests.then_some(recs),
    }
}

pub const SLO: &str = "ttft<=60ms,ttft:p95<=70ms";

/// A healthy run with per-request records, an SLO and a price.
pub fn run() -> RunResult {
    let p = Profile::default();
    run_of("llama-3.1-8b", p, records(p), Some(SLO), true)
}

/// The same run saved without per-request records.
pub fn run_without_requests() -> RunResult {
    let p = Profile::default();
    run_of("llama-3.1-8b", p, records(p), Some(SLO), false)
}

/// Every string a reader sees is hostile: the model name, the failure
/// messages, a finish reason, a warning, config values.
pub fn adversarial_run() -> RunResult {
    let p = Profile { fail_every: 5, ..Profile::default() };
    let mut recs = records(p);
    let mut n = 0;
    for r in &mut recs {
        if let Outcome::Failed { message, .. } = &mut r.outcome {
            *message = [FORMULA_MESSAGE, BARE_FORMULA, PWN_MESSAGE][n % 3].into();
            n += 1;
        }
    }
    recs[0].finish_reason = Some("=HYPERLINK(\"http://evil.example\",\"x\")".into());
    let mut r = run_of(XSS_MODEL, p, recs, Some(SLO), true);
    r.target.server = Some("<img src=x onerror=alert(2)>".into());
    r.warnings.push(format!("server said: {PWN_MESSAGE}"));
    r.config.workload.as_mut().unwrap().dataset =
        Some("</script><script>document.body.setAttribute('data-pwned','2')</script>".into());
    r.config.client.as_mut().unwrap().extra_body.insert("note".into(), json!("a|b `c` **d** [x](javascript:alert(3))"));
    r
}

/// An SLO whose limit every request of [`mixed_run`] meets, beside an
/// objective whose threshold only some do.
pub const MIXED_SLO: &str = "ttft<=10s,ttft:p50<=100ms";

/// A run judged by [`MIXED_SLO`]: every request within its limit, and
/// `within` of every 5 within its objective's threshold (the others get
/// their first token 200 ms later). The verdict holds the limit's share
/// (100%) to its target, and the p50 passes; goodput's share, every
/// threshold, is `within` / 5.
pub fn mixed_run(within: u64) -> RunResult {
    let p = Profile::default();
    let mut recs = records(p);
    for r in recs.iter_mut().filter(|r| r.id % 5 >= within) {
        let late = ns(200.0);
        r.chunks = r.chunks.iter().map(|c| OutputChunk { t: c.t + late, ..c }).collect();
        r.stream_end = r.stream_end.map(|t| t + late);
        r.end += late;
    }
    run_of("llama-3.1-8b", p, recs, Some(MIXED_SLO), true)
}

/// [`mixed_run`] as a document saved before the limits were counted alone
/// beside objectives: its attainment counted every threshold, as goodput's
/// share does (and failed short of 90%), and it has no `by_limits` nor an
/// interval of the limits' share.
pub fn mixed_run_saved_before(within: u64) -> RunResult {
    let mut r = mixed_run(within);
    let g = r.summary.goodput.clone().unwrap();
    let slo = r.slo.as_mut().unwrap();
    let a = slo.attainment.as_mut().unwrap();
    (a.measured, a.good_requests, a.judged_requests) = (g.slo_attainment, g.good_requests, g.judged_requests);
    a.pass = a.measured >= a.target;
    a.by_limits = false;
    slo.pass = a.pass && slo.objectives.iter().all(|o| o.pass);
    r.summary.intervals.as_mut().unwrap().goodput.as_mut().unwrap().limits_attainment = None;
    // Read back as such a document reads.
    let v = serde_json::to_value(&r).unwrap();
    assert!(
        v["slo"]["attainment"].get("by_limits").is_none()
            && v["summary"]["intervals"]["goodput"].get("limits_attainment").is_none()
    );
    serde_json::from_value(v).unwrap()
}

/// The SLO of [`sweep`]: a per-request limit and an objective, on TTFT.
pub const SWEEP_SLO: &str = "ttft<=200ms,ttft:p95<=250ms";

/// A sweep over concurrency 1..32 on a server that saturates near 8.
pub fn sweep() -> SweepResult {
    sweep_of(SWEEP_SLO, |i| i % 2 == 0)
}

/// [`sweep`] judged by `slo`, the points `keep(i)` says saved with their records.
pub fn sweep_of(slo: &str, keep: fn(usize) -> bool) -> SweepResult {
    let loads = [1u64, 2, 4, 8, 16, 32];
    let points: Vec<SweepPoint> = loads
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let pressure = (c as f64 / 8.0).max(1.0);
            let p = Profile {
                requests: 40 + 8 * c,
                concurrency: c,
                ttft_ms: 40.0 * pressure * pressure,
                itl_ms: 4.0 * (1.0 + c as f64 / 16.0),
                seed: 10 + i as u64,
                ..Profile::default()
            };
            SweepPoint {
                load: Load::Concurrency(c),
                origin: "grid".into(),
                result: run_of("llama-3.1-8b", p, records(p), Some(slo), keep(i)),
            }
        })
        .collect();
    let analysis = analyze_sweep(&points, DEFAULT_ATTAINMENT_TARGET);
    let first = &points[0].result;
    SweepResult {
        schema: SCHEMA.into(),
        tool: first.tool.clone(),
        kind: "sweep".into(),
        started_unix_s: first.started_unix_s,
        interrupted: false,
        config: serde_json::from_value(json!({"loads": loads, "slo": slo})).expect("a config"),
        target: first.target.clone(),
        points,
        analysis,
    }
}

/// A verdict of NOT STEADY for `why`.
pub fn unsteady(why: &str) -> goodput_core::analysis::stability::Stability {
    goodput_core::analysis::stability::Stability {
        steady: false,
        overloaded: true,
        reason: Some(why.into()),
        ..Default::default()
    }
}

/// An overload's reason, as the verdict words it.
pub const WHY: &str = "arrivals 36.0 req/s, completions 30.1 req/s: 5.9 more requests outstanding every second";

/// A stages sweep of two stages of 20 s each, as `sweep --stages
/// c=4/20s,c=8/20s --include-requests` would write it, the second not steady.
pub fn stages_sweep() -> SweepResult {
    let mut sw = sweep_of(SWEEP_SLO, |_| true);
    sw.points.drain(..2);
    sw.points.truncate(2);
    sw.config.mode = "stages".into();
    for p in &mut sw.points {
        p.origin = "stage".into();
        p.result.config.load.as_mut().unwrap().duration = Some("20s".into());
    }
    sw.points[1].result.summary.stability = Some(unsteady(WHY));
    sw
}

/// A slower candidate beside `run()`: TTFT up about 30%, throughput down.
pub fn slower_run() -> RunResult {
    let p = Profile { ttft_ms: 65.0, itl_ms: 5.5, seed: 7, ..Profile::default() };
    run_of("llama-3.1-8b", p, records(p), Some(SLO), true)
}

/// The server batches at most this many requests; the rest wait.
const SERVER_BATCH: usize = 6;
/// KV capacity, tokens: six requests of 256 + 32 tokens nearly fill it.
const KV_TOKENS: f64 = 1800.0;
const SCRAPE_EVERY_S: f64 = 0.1;
const TTFT_BUCKETS: [f64; 10] = [0.01, 0.025, 0.04, 0.05, 0.06, 0.075, 0.1, 0.15, 0.25, 0.5];
const ITL_BUCKETS: [f64; 8] = [0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.025, 0.05];

fn histogram_text(name: &str, bounds: &[f64], samples: &[f64]) -> String {
    let mut o = format!("# TYPE {name} histogram\n");
    for b in bounds {
        let n = samples.iter().filter(|&&s| s <= *b).count();
        o.push_str(&format!("{name}_bucket{{model_name=\"m\",le=\"{b}\"}} {n}\n"));
    }
    let sum: f64 = samples.iter().sum();
    o.push_str(&format!("{name}_bucket{{model_name=\"m\",le=\"+Inf\"}} {}\n", samples.len()));
    o.push_str(&format!("{name}_sum{{model_name=\"m\"}} {sum}\n{name}_count{{model_name=\"m\"}} {}\n", samples.len()));
    o
}

/// What a vLLM server behind a DCGM exporter would expose at `t` seconds
/// into a run of `recs`: counters and histograms hold what the records did
/// by then, the gauges what was in flight.
pub fn vllm_scrape(recs: &[RequestRecord], t: f64) -> String {
    let s = |d: Duration| d.as_secs_f64();
    let inside: Vec<&RequestRecord> = recs.iter().filter(|r| s(r.sent) <= t && t < s(r.end)).collect();
    let running = inside.len().min(SERVER_BATCH);
    let waiting = inside.len() - running;
    let generated_by =
        |r: &RequestRecord| r.chunks.iter().filter(|c| s(c.t) <= t).map(|c| c.tokens as u64).sum::<u64>();
    let kv: f64 =
        inside.iter().take(running).map(|r| (r.input_tokens + generated_by(r)) as f64).sum::<f64>() / KV_TOKENS;
    let generated: u64 = recs.iter().map(generated_by).sum();
    let prefilled: Vec<&RequestRecord> =
        recs.iter().filter(|r| r.chunks.first().is_some_and(|c| s(c.t) <= t)).collect();
    let prompt: u64 = prefilled.iter().map(|r| r.input_tokens).sum();
    let hits: u64 = prefilled.iter().filter_map(|r| r.counts.usage_cached_prompt).sum();
    let done = recs.iter().filter(|r| r.outcome.is_success() && s(r.end) <= t).count();
    // The server starts its clock a little after the client sends.
    let ttft: Vec<f64> = prefilled.iter().filter_map(|r| r.ttft()).map(|d| s(d) - 0.0015).collect();
    let itl: Vec<f64> =
        recs.iter().flat_map(|r| r.chunks.pairs().filter(|(_, b)| s(b.t) <= t).map(|(a, b)| s(b.t - a.t))).collect();
    let util = 0.35 + 0.6 * running as f64 / SERVER_BATCH as f64;
    format!(
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} {running}\n\
         # TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{model_name=\"m\"}} {waiting}\n\
         # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}\n\
         # TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{{model_name=\"m\"}} {prompt}\n\
         # TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{model_name=\"m\"}} {generated}\n\
         # TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{{model_name=\"m\"}} {prompt}\n\
         # TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\n\
         # TYPE vllm:num_preemptions_total counter\nvllm:num_preemptions_total{{model_name=\"m\"}} {}\n\
         # TYPE vllm:request_success_total counter\n\
         vllm:request_success_total{{model_name=\"m\",finished_reason=\"length\"}} {done}\n\
         {}{}\
         # TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{gpu=\"0\"}} {}\n\
         # TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{{gpu=\"0\"}} {}\n\
         # TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{{gpu=\"0\"}} {}\n\
         # TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{gpu=\"0\"}} {}\n",
        (t / 1.5).floor(),
        histogram_text("vllm:time_to_first_token_seconds", &TTFT_BUCKETS, &ttft),
        histogram_text("vllm:inter_token_latency_seconds", &ITL_BUCKETS, &itl),
        (util * 100.0).round(),
        (200.0 + 450.0 * util).round(),
        (60_000.0 + 8_000.0 * kv).round(),
        (550_000.0 * t).round(),
    )
}

/// A run against a (synthetic) vLLM server whose metrics were scraped every
/// 0.1 s: the `server_signals` block, cross-check and diagnosis built from
/// the Prometheus text as `bench` builds them (`ServerSignals::analyse`).
/// The server batches six of eight streams, so requests queue and the KV
/// cache runs near full.
pub fn server_run() -> RunResult {
    use goodput_core::prometheus::scrape::{parse, ScrapeSample, ServerSignals, Signals};
    let p = Profile { requests: 96, concurrency: 8, ttft_ms: 60.0, seed: 3, ..Profile::default() };
    let mut recs = records(p);
    for r in &mut recs {
        r.counts.usage_cached_prompt = Some(if r.id % 2 == 0 { 128 } else { 0 });
    }
    let mut run = run_of("llama-3.1-8b", p, recs.clone(), Some(SLO), true);
    let end = recs.iter().map(|r| r.end).max().unwrap().as_secs_f64();
    let samples: Vec<ScrapeSample> = (0..=((end / SCRAPE_EVERY_S).ceil() as u32 + 1))
        .map(|k| {
            let t = k as f64 * SCRAPE_EVERY_S;
            let mut signals = Signals::from_scrape(&parse(&vllm_scrape(&recs, t)));
            signals.unmapped.clear();
            ScrapeSample { t: Duration::from_secs_f64(t), signals }
        })
        .collect();
    let mut signals = ServerSignals {
        urls: vec!["http://127.0.0.1:8000/metrics".into(), "http://127.0.0.1:9400/metrics".into()],
        interval_s: SCRAPE_EVERY_S,
        scrapes: samples.len(),
        samples,
        ..ServerSignals::default()
    };
    run.diagnosis = signals.analyse(
        &recs,
        &run.summary,
        &run.window,
        goodput_core::prometheus::scrape::ClientLoad::closed(p.concurrency as usize),
        false,
    );
    run.server_signals = Some(signals);
    run
}

/// `server_run` with every string of its server side hostile: the engine
/// name, an endpoint, the last scrape error, a cross-check note, a signal
/// name, and diagnosis lines.
pub fn adversarial_server_run() -> RunResult {
    let mut r = server_run();
    // The engine, its sources and the signal names are goodput's own names
    // (a document naming others is refused on reading); the strings that
    // come from outside are the endpoints, the scrape error and the notes.
    let s = r.server_signals.as_mut().unwrap();
    s.urls.push("javascript:alert(1)</span><script>document.body.setAttribute('data-pwned','5')</script>".into());
    s.failed_scrapes = 2;
    s.last_error = Some(PWN_MESSAGE.into());
    s.cross_check.as_mut().unwrap().notes.push(FORMULA_MESSAGE.into());
    use goodput_core::{Diagnosis, DiagnosisKind};
    r.diagnosis.push(Diagnosis { kind: DiagnosisKind::TailDegrading, message: PWN_MESSAGE.into() });
    r.diagnosis.push(Diagnosis { kind: DiagnosisKind::QueueBuildUp, message: BARE_FORMULA.into() });
    r
}

/// Samples of the simulated engine in `estimate_run`.
pub const ENGINE_SAMPLES: usize = 90;

/// An estimate: the run of a simulated engine, with its `engine` block in
/// the shape `goodput estimate` writes (`engine_view_json`).
pub fn estimate_run() -> RunResult {
    let p = Profile { requests: 64, concurrency: 8, ttft_ms: 80.0, seed: 5, ..Profile::default() };
    let mut r = run_of("Llama-3.1-8B", p, records(p), None, true);
    r.kind = "estimate".into();
    r.target = Target {
        url: "virtual://Llama-3.1-8B@1xH100 SXM".into(),
        model: "Llama-3.1-8B".into(),
        api: "virtual".into(),
        embedded: true,
        server: Some("goodput-sim (virtual time)".into()),
    };
    let t: Vec<f64> = (0..ENGINE_SAMPLES).map(|i| 0.03 * (i + 1) as f64).collect();
    let running: Vec<u64> = (0..ENGINE_SAMPLES).map(|i| (i as u64 + 1).min(8)).collect();
    let waiting: Vec<u64> = (0..ENGINE_SAMPLES).map(|i| (6u64).saturating_sub(i as u64 / 4)).collect();
    let kv: Vec<f64> = (0..ENGINE_SAMPLES).map(|i| 0.05 + 0.4 * (i as f64 / 15.0).sin().abs()).collect();
    r.engine = serde_json::from_value(json!({
        "config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "precision": "bf16", "kv_cache_dtype": "auto", "tp": 1,
            "gpu_memory_utilization": 0.9, "max_num_seqs": 1024, "max_num_batched_tokens": 8192, "block_size": 16,
            "enable_chunked_prefill": true, "enable_prefix_caching": true,
        },
        "steps": 1044,
        "mean_batch_seqs": 7.4,
        "mean_batch_tokens": 96.5,
        "max_batch_seqs": 8,
        "preemptions": 3,
        "prefix_cache_queries_tokens": 16384,
        "prefix_cache_hits_tokens": 4096,
        "prefix_cache_hit_rate": 0.25,
        "kv_capacity_tokens": 421008,
        "max_num_seqs": 1024,
        "busy_s": 2.6,
        "makespan_s": 2.7,
        "kv_usage_max": kv.iter().copied().fold(0.0, f64::max),
        "series": {"t_s": t, "kv_usage": kv, "running": running, "waiting": waiting},
    }))
    .unwrap();
    r
}

/// `estimate_run` with hostile names in the engine's config.
pub fn adversarial_estimate_run() -> RunResult {
    let mut r = estimate_run();
    let c = &mut r.engine.as_mut().unwrap().config;
    c.model = XSS_MODEL.into();
    c.gpu = "<img src=x onerror=\"document.body.setAttribute('data-pwned','6')\">".into();
    c.precision = "`bf16` | **x**".into();
    r
}

/// A frontier document of three configurations (one failed, its log tail
/// hostile), analysed, as `plan` writes one.
pub fn frontier_doc() -> goodput_core::doc::frontier::FrontierResult {
    use goodput_core::doc::frontier::*;
    use goodput_core::doc::sweep::Load;
    let point = |users: u64, x: f64, y: f64, meets: bool| FrontierPoint {
        load: Load::Concurrency(users),
        output_tokens_per_s: y * 2.0,
        output_tokens_per_s_per_gpu: y,
        tokens_per_s_per_user: Some(x),
        ttft_ms: Some(120.0 + users as f64),
        tpot_ms: Some(1000.0 / x),
        goodput_tokens_per_s: Some(if meets { y * 2.0 } else { 0.0 }),
        meets_slo: Some(meets),
        usd_per_million_output_tokens: Some(5.0 / y),
        joules_per_output_token: None,
        output_tokens_per_s_per_mw: None,
        completed: 100,
        failed: 0,
        steady: None,
        client_stalled: None,
        spec_decode: None,
        extra: Default::default(),
    };
    let config = |id: &str, points: Vec<FrontierPoint>| FrontierConfig {
        id: id.into(),
        params: [("tp".to_string(), "2".to_string())].into_iter().collect(),
        gpu: Some("H100 SXM".into()),
        gpus: 2,
        gpu_hour_usd: Some(2.5),
        status: ConfigStatus::Ok,
        error: None,
        exit_status: None,
        log_tail: None,
        dominated: None,
        exited_during: None,
        points_of: None,
        serve_command: None,
        points,
        extra: Default::default(),
    };
    let mut failed = config("<img src=x onerror=alert(1)>", Vec::new());
    failed.status = ConfigStatus::Failed;
    failed.error = Some("never became ready".into());
    failed.exit_status = Some(1);
    failed.log_tail = Some("</pre><script>document.body.dataset.pwned=1</script>".into());
    let mut doc = FrontierResult {
        started_unix_s: 1.7e9,
        model: "Llama-3.1-8B".into(),
        slo: Some("tpot:p90<=40ms".into()),
        configs: vec![
            config(
                "h100 tp1x2 fp8",
                vec![point(2, 90.0, 400.0, true), point(16, 60.0, 1800.0, true), point(64, 30.0, 3000.0, false)],
            ),
            config("h100 tp2x1 bf16", vec![point(1, 110.0, 150.0, true), point(8, 80.0, 700.0, true)]),
            config("h200 tp1x2 bf16", vec![point(2, 70.0, 300.0, true), point(16, 45.0, 1200.0, true)]),
            failed,
        ],
        notes: vec!["a note".into()],
        ..FrontierResult::new(
            goodput_core::Tool { name: "goodput".into(), version: "0.1.0".into(), commit: None },
            FrontierSource::Predicted,
            0.9,
            90.0,
        )
    };
    analyze_frontier(&mut doc);
    doc
}
