//! The agreement between measuring and predicting: one `bench` run over HTTP
//! against the engine server, and one estimate of the same load in virtual
//! time, both analysed by goodput-core and reduced to the figures compared.
//! Shared by the sim_agreement test and the release example.

use goodput_core::{analyze, AnalysisOptions, RequestRecord};
use goodput_load::{
    Api, Arrival, BodyOptions, Client, ClientConfig, Control, LengthDist, LoadPlan, Sessions, ThinkTime, Turns,
    Workload,
};
use goodput_sim::engine::{EngineConfig, PromptKind};
use goodput_sim::engine_server::{app, EngineServer, EngineServerConfig};
use std::sync::Arc;
use std::time::Duration;

/// A synthetic load (open loop with Poisson arrivals at `rate`, closed loop
/// with `concurrency` users, or both) and the speed the server runs at.
#[derive(Debug, Clone)]
pub struct Plan {
    pub concurrency: Option<u32>,
    /// Requests per second.
    pub rate: Option<f64>,
    /// Measured requests, after `warmup` more.
    pub requests: u64,
    pub warmup: u64,
    pub input: LengthDist,
    pub output: LengthDist,
    pub seed: u64,
    pub speed: f64,
    /// Sessions of this many turns (`requests` and `warmup` then count
    /// sessions), with `think` (simulated time) between answer and question.
    pub turns: Option<u32>,
    pub think: Duration,
}

impl Plan {
    /// Moderate open-loop load: 8 requests/s of 1.5–2.5k prompt tokens and
    /// 32–96 output tokens, about half of what Llama-3.1-8B on an H100
    /// sustains at these lengths.
    pub fn open_loop(speed: f64) -> Plan {
        Plan {
            concurrency: None,
            rate: Some(8.0),
            requests: 40,
            warmup: 8,
            input: LengthDist::Uniform { lo: 1536, hi: 2560 },
            output: LengthDist::Uniform { lo: 32, hi: 96 },
            seed: 7,
            speed,
            turns: None,
            think: Duration::ZERO,
        }
    }

    /// Sixteen users back to back, 256–1024 prompt and 32–96 output tokens;
    /// the first round (all arriving at once) is warm-up.
    pub fn closed_loop(speed: f64) -> Plan {
        Plan {
            concurrency: Some(16),
            rate: None,
            requests: 48,
            warmup: 16,
            input: LengthDist::Uniform { lo: 256, hi: 1024 },
            output: LengthDist::Uniform { lo: 32, hi: 96 },
            seed: 7,
            speed,
            turns: None,
            think: Duration::ZERO,
        }
    }

    /// Eight users holding three-turn conversations with 300 ms of thought
    /// between answer and question; the first eight sessions are warm-up.
    pub fn sessions(speed: f64) -> Plan {
        Plan {
            concurrency: Some(8),
            requests: 16,
            warmup: 8,
            turns: Some(3),
            think: Duration::from_millis(300),
            ..Plan::closed_loop(speed)
        }
    }
}

/// What is compared, in simulated time (a bench at speed s is scaled back).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub ttft_p50_ms: f64,
    pub tpot_p50_ms: f64,
    pub output_tokens_per_s: f64,
}

impl Figures {
    fn of(records: &[RequestRecord], time_scale: f64) -> Figures {
        let a = analyze(records, &AnalysisOptions::default());
        assert_eq!(a.summary.requests.failed, 0, "failed requests: {:?}", a.summary.requests);
        let p50 = |d: &goodput_core::Distribution| d.p(50.0).expect("a p50") * time_scale;
        Figures {
            ttft_p50_ms: p50(&a.summary.ttft_ms),
            tpot_p50_ms: p50(&a.summary.tpot_ms),
            output_tokens_per_s: a.summary.throughput.output_tokens_per_s / time_scale,
        }
    }

    /// Signed relative differences of `self` from `reference`, by figure.
    pub fn errors(&self, reference: &Figures) -> [(&'static str, f64); 3] {
        let rel = |a: f64, b: f64| (a - b) / b;
        [
            ("ttft_p50", rel(self.ttft_p50_ms, reference.ttft_p50_ms)),
            ("tpot_p50", rel(self.tpot_p50_ms, reference.tpot_p50_ms)),
            ("output_tokens_per_s", rel(self.output_tokens_per_s, reference.output_tokens_per_s)),
        ]
    }
}

fn workload(plan: &Plan) -> Workload {
    Workload::Synthetic {
        input: plan.input.clone(),
        output: plan.output.clone(),
        seed: plan.seed,
        tokenizer: None,
        shared_prefix: None,
    }
}

/// The load plan both sides run: the estimate on the simulated clock, the
/// bench on the server's, `speed` times faster (the same arrivals, sooner).
fn load_plan(plan: &Plan, speed: f64) -> LoadPlan {
    LoadPlan {
        requests: Some(plan.requests),
        duration: None,
        warmup: plan.warmup,
        warmup_time: Duration::ZERO,
        concurrency: plan.concurrency.map(|c| c as usize),
        rate: plan.rate.map(|r| (r * speed, Arrival::Poisson)),
        trace: None,
        trace_source: None,
        ramp_up: Duration::ZERO,
        // Think times too pass `speed` times faster on the server's clock.
        sessions: plan.turns.map(|k| Sessions {
            turns: Turns::Drawn(LengthDist::Fixed(k)),
            think: ThinkTime::Fixed(plan.think.div_f64(speed)),
        }),
        seed: plan.seed,
        grace: Duration::from_secs(10),
        shard: None,
        user_steps: Vec::new(),
        cancel: None,
    }
}

/// Predicts the plan's figures in virtual time, as `goodput estimate` does.
pub fn estimate(cfg: &EngineConfig, plan: &Plan) -> Figures {
    // The bench below loads the chat route: its prompts carry the model's template.
    let server = goodput::virtual_point::VirtualServer::new(cfg, PromptKind::Chat);
    let run =
        goodput::virtual_point::run_virtual(server, &load_plan(plan, 1.0), &workload(plan)).expect("the estimate runs");
    Figures::of(&run.records, 1.0)
}

/// Measures the plan's figures: the engine server on a loopback port, the
/// load from goodput-load's runner and HTTP client.
pub async fn bench(cfg: &EngineConfig, plan: &Plan) -> Figures {
    let server_cfg = EngineServerConfig { speed: plan.speed, ..EngineServerConfig::new(cfg.clone()) };
    let model = server_cfg.model_name.clone();
    let server = EngineServer::start(server_cfg).expect("the engine server starts");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving =
        tokio::spawn(goodput_sim::server::serve(listener, app(server), async move { stopped.cancelled().await }));

    let body = BodyOptions {
        api: Api::Chat,
        model,
        stream: true,
        include_usage: true,
        ignore_eos: true,
        ..Default::default()
    };
    let client = ClientConfig {
        base_url: base,
        api_key: None,
        body,
        timeout: Duration::from_secs(120),
        transport: Default::default(),
        stamps: Default::default(),
        key_header: Default::default(),
        headers: Vec::new(),
        cancel: None,
        max_buffer: goodput_load::client::MAX_BUFFER,
    };
    let client = Arc::new(Client::new(client, None).expect("a client"));
    let load = load_plan(plan, plan.speed);
    let out = goodput_load::run(&load, client, Arc::new(workload(plan)), Control::default(), |_: &RequestRecord| {})
        .await
        .expect("the load runs");
    stop.cancel();
    let _ = serving.await;
    Figures::of(&out.records, plan.speed)
}
