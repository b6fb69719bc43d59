//! Result documents for the exporter tests: runs built from synthetic,
//! deterministic records through goodput-core's own analysis, a sweep of
//! them at rising load, and an adversarial run whose strings try to break
//! out of every format.
#![allow(dead_code)]

use goodput_core::cost::CostConfig;
use goodput_core::record::{Channel, ChunkTokenSource, CountSource, FailureKind, OutputChunk};
use goodput_core::sweep::{analyze_sweep, Load, SweepPoint, SweepResult, DEFAULT_ATTAINMENT_TARGET};
use goodput_core::{analyze, AnalysisOptions, Compat, Outcome, RequestRecord, RunResult, Target, Tool, SCHEMA};
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
        schema: SCHEMA.into(),
        tool: Tool { name: "goodput".into(), version: "0.1.0".into() },
        kind: "bench".into(),
        started_unix_s: 1_767_225_600.0,
        interrupted: false,
        config: json!({
            "client": {"api": "chat", "model": model, "stream": true, "url": "http://127.0.0.1:8000"},
            "load": {"concurrency": p.concurrency, "requests": p.requests, "warmup": 0},
            "workload": {"input_tokens": "256", "output_tokens": p.output_tokens.to_string()},
            "slo": slo,
        }),
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
        compat: Compat { vllm: a.vllm },
        engine: None,
        server_signals: None,
        warnings: a.warnings,
        diagnosis: Vec::new(),
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
    r.config["workload"]["dataset"] = json!("</script><script>document.body.setAttribute('data-pwned','2')</script>");
    r.config["client"]["extra_body"] = json!({"note": "a|b `c` **d** [x](javascript:alert(3))"});
    r
}

/// A sweep over concurrency 1..32 on a server that saturates near 8.
pub fn sweep() -> SweepResult {
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
                result: run_of("llama-3.1-8b", p, records(p), Some("ttft<=200ms,ttft:p95<=250ms"), i % 2 == 0),
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
        config: json!({"loads": loads, "slo": "ttft<=200ms,ttft:p95<=250ms"}),
        target: first.target.clone(),
        points,
        analysis,
    }
}

/// A slower candidate beside `run()`: TTFT up about 30%, throughput down.
pub fn slower_run() -> RunResult {
    let p = Profile { ttft_ms: 65.0, itl_ms: 5.5, seed: 7, ..Profile::default() };
    run_of("llama-3.1-8b", p, records(p), Some(SLO), true)
}
