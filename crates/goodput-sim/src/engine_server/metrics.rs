//! What `/metrics` reports, under vLLM's V1 metric names, and how it is
//! written in Prometheus text format.

use crate::engine::{Engine, EngineStats};
use std::fmt::Write;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What `/metrics` reports: the engine's stats and the front's own
/// observations. Latencies are wall-clock seconds, what a client of this
/// server measures, whatever the speed.
#[derive(Debug, Clone)]
pub(super) struct Observed {
    pub(super) engine: EngineStats,
    /// The replica's load as SGLang reports it to a router
    /// ([`Engine::load_tokens`]), published with `engine` where a router
    /// polls it (`None`: none does, and it is not counted).
    pub(super) load_tokens: Option<u64>,
    /// What the replica last published to SGLang's data-parallel
    /// controller ([`Engine::published_load`]), where it publishes.
    pub(super) published: Option<crate::engine::Published>,
    pub(super) ttft: Histogram,
    pub(super) itl: Histogram,
    pub(super) e2e: Histogram,
    pub(super) queue: Histogram,
    /// How late each step ended against the engine's timeline on the wall
    /// clock: the host's lateness (a busy machine), not the engine's.
    pub(super) step_lateness: Histogram,
    pub(super) finished_length: u64,
    /// Pooling passes (embeddings, rerank) finished: vLLM's `stop`.
    pub(super) finished_stop: u64,
    pub(super) aborted: u64,
    /// Disaggregated: each KV transfer that landed on this (decode)
    /// instance, from the prefill's end.
    pub(super) kv_xfer: Histogram,
    /// Each step's tokens as vLLM counts them (`StepOutcome::iteration_tokens`).
    pub(super) iteration_tokens: Histogram,
    /// The replica's GPUs and what they draw idle and at most (the power
    /// model's), for its DCGM-style counters ([`dcgm`]).
    pub(super) gpus: u32,
    pub(super) idle_w: f64,
    pub(super) provisioned_w: f64,
}

impl Observed {
    /// The engine's state as it stands: its stats, and its load where a
    /// router polls it.
    pub(super) fn publish(&mut self, engine: &Engine) {
        self.engine = engine.stats();
        if let Some(l) = &mut self.load_tokens {
            *l = engine.load_tokens();
        }
        self.published = engine.published_load();
    }

    /// `polled`: a router polls the replica's load ([`Observed::publish`]).
    pub(super) fn new(engine: &Engine, polled: bool) -> Observed {
        Observed {
            engine: engine.stats(),
            load_tokens: polled.then(|| engine.load_tokens()),
            published: engine.published_load(),
            ttft: Histogram::new(TTFT_BUCKETS),
            itl: Histogram::new(ITL_BUCKETS),
            e2e: Histogram::new(REQUEST_LATENCY_BUCKETS),
            queue: Histogram::new(REQUEST_LATENCY_BUCKETS),
            step_lateness: Histogram::new(LATENESS_BUCKETS),
            finished_length: 0,
            finished_stop: 0,
            aborted: 0,
            kv_xfer: Histogram::new(NIXL_XFER_BUCKETS),
            iteration_tokens: Histogram::new(ITERATION_TOKEN_BUCKETS),
            gpus: engine.roofline().gpus().max(1),
            idle_w: engine.roofline().idle_watts(),
            provisioned_w: engine.roofline().provisioned_watts(),
        }
    }
}

/// Every replica's engine and front metrics, labelled with `model_name` and
/// the replica's index as `engine` (as vLLM labels its data-parallel
/// engines), in Prometheus text format 0.0.4 (the fault counters follow
/// them). With speculative decoding (`spec_tokens` drafts a proposal), vLLM's
/// `spec_decode_*` counters too, one per-position series per draft position;
/// disaggregated (`pd`: its first `prefill` instances are the prefill
/// pool's), vLLM's NIXL transfer histogram, and each instance's series
/// labelled `role="prefill"` or `role="decode"`: both count a request's
/// prompt tokens and the prefill instance its first token, as vLLM's
/// instances do, and a scraper tells them apart by it.
pub(super) fn prometheus(all: &[Observed], model_name: &str, spec_tokens: Option<u32>, pd: Option<usize>) -> String {
    let model = escape_label(model_name);
    let role = |i: usize| match pd {
        Some(prefill) if i < prefill => ",role=\"prefill\"",
        Some(_) => ",role=\"decode\"",
        None => "",
    };
    let labels: Vec<String> =
        (0..all.len()).map(|i| format!("engine=\"{i}\",model_name=\"{model}\"{}", role(i))).collect();
    let mut s = String::with_capacity(12 * 1024 * all.len().max(1));
    type Value = fn(&Observed) -> f64;
    let gauges: [(&str, &str, Value); 3] = [
        ("vllm:num_requests_running", "Number of requests in model execution batches.", |o| o.engine.running as f64),
        ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", |o| o.engine.waiting as f64),
        ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", |o| o.engine.kv_usage),
    ];
    for (name, help, v) in gauges {
        let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} gauge\n");
        for (o, l) in all.iter().zip(&labels) {
            let _ = writeln!(s, "{name}{{{l}}} {}", v(o));
        }
    }
    type Count = fn(&Observed) -> u64;
    let counters: [(&str, &str, Count); 5] = [
        ("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", |o| {
            o.engine.prefix_cache_queries
        }),
        ("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", |o| {
            o.engine.prefix_cache_hits
        }),
        ("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", |o| o.engine.preemptions),
        ("vllm:prompt_tokens_total", "Number of prefill tokens processed.", |o| o.engine.prompt_tokens),
        ("vllm:generation_tokens_total", "Number of generation tokens processed.", |o| o.engine.generation_tokens),
    ];
    for (name, help, v) in counters {
        let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} counter\n");
        for (o, l) in all.iter().zip(&labels) {
            let _ = writeln!(s, "{name}{{{l}}} {}", v(o));
        }
    }
    if let Some(k) = spec_tokens {
        let spec: [(&str, &str, Count); 3] = [
            ("vllm:spec_decode_num_drafts_total", "Number of spec decoding drafts.", |o| o.engine.spec_drafts),
            ("vllm:spec_decode_num_draft_tokens_total", "Number of draft tokens.", |o| o.engine.spec_draft_tokens),
            ("vllm:spec_decode_num_accepted_tokens_total", "Number of accepted tokens.", |o| {
                o.engine.spec_accepted_tokens
            }),
        ];
        for (name, help, v) in spec {
            let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} counter\n");
            for (o, l) in all.iter().zip(&labels) {
                let _ = writeln!(s, "{name}{{{l}}} {}", v(o));
            }
        }
        let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
        let _ = write!(s, "# HELP {name} Accepted tokens per draft position.\n# TYPE {name} counter\n");
        for (o, l) in all.iter().zip(&labels) {
            for pos in 0..k as usize {
                let v = o.engine.spec_accepted_by_position.get(pos).copied().unwrap_or(0);
                let _ = writeln!(s, "{name}{{{l},position=\"{pos}\"}} {v}");
            }
        }
    }
    let name = "vllm:request_success_total";
    let _ = write!(s, "# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter\n");
    for (o, l) in all.iter().zip(&labels) {
        // The simulated model never emits end of sequence: a generation ends
        // at its length, and only a pooling pass stops.
        for (reason, v) in [("stop", o.finished_stop), ("length", o.finished_length), ("abort", o.aborted)] {
            let _ = writeln!(s, "{name}{{{l},finished_reason=\"{reason}\"}} {v}");
        }
    }
    type Hist = fn(&Observed) -> &Histogram;
    let histograms: [(Hist, &str, &str); 6] = [
        (|o| &o.iteration_tokens, "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step."),
        (|o| &o.ttft, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds."),
        (|o| &o.itl, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds."),
        (|o| &o.e2e, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds."),
        (|o| &o.queue, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request."),
        (
            |o| &o.step_lateness,
            "goodput_sim_step_lateness_seconds",
            "How late the simulated engine's steps ended against its own timeline (a busy host, not the engine).",
        ),
    ];
    for (h, name, help) in histograms {
        let _ = write!(s, "# HELP {name} {help}\n# TYPE {name} histogram\n");
        for (o, l) in all.iter().zip(&labels) {
            h(o).render_series(&mut s, name, l);
        }
    }
    if pd.is_some() {
        let name = "vllm:nixl_xfer_time_seconds";
        let _ = write!(
            s,
            "# HELP {name} Histogram of transfer duration for NIXL KV Cache transfers.\n# TYPE {name} histogram\n"
        );
        for (o, l) in all.iter().zip(&labels) {
            o.kv_xfer.render_series(&mut s, name, l);
        }
    }
    s
}

/// vLLM's `cache_config_info`: the KV cache's configuration in its labels,
/// value 1, a series per engine (`engine="0"` …) as vLLM V1 gives one per
/// data-parallel engine; `num_gpu_blocks` × `block_size` is the cache's size
/// in tokens, which a scraper reads (`kv_cache_tokens`).
pub(super) fn cache_config_info(all: &[Observed], cfg: &crate::engine::EngineConfig) -> String {
    let name = "vllm:cache_config_info";
    let mut s = format!("# HELP {name} Information of the LLMEngine CacheConfig\n# TYPE {name} gauge\n");
    for (i, o) in all.iter().enumerate() {
        let _ = writeln!(
            s,
            "{name}{{block_size=\"{}\",cache_dtype=\"{}\",enable_prefix_caching=\"{}\",engine=\"{i}\",\
             gpu_memory_utilization=\"{}\",num_gpu_blocks=\"{}\"}} 1.0",
            cfg.block_size,
            cfg.kv_cache_dtype.as_str(),
            if cfg.enable_prefix_caching { "True" } else { "False" },
            cfg.memory_share(),
            o.engine.kv_blocks_total,
        );
    }
    s
}

/// The GPUs' energy and power limits as NVIDIA's DCGM exporter names them,
/// from the engine's power model (docs/simulator.md, "Power and energy"):
/// `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ, a counter) and
/// `DCGM_FI_DEV_POWER_MGMT_LIMIT` (W, the TDP), a series per GPU, numbered
/// across the replicas (each replica's energy shared evenly by its GPUs).
/// A replica's energy is its steps' (each step's time at its power) and
/// its idle power over the rest of `elapsed`, the engine's time since the
/// server started: on the wall clock at `--speed` S the counter runs S
/// times as fast, as the tokens do, so joules per token hold; the limit is
/// S times the TDP, so that the watts against it and the tokens/s per
/// megawatt hold too.
pub(super) fn dcgm(
    all: &[Observed],
    elapsed: Duration,
    speed: f64,
    gpu_model: &str,
    seen: &mut Option<EnergySeen>,
) -> String {
    let model = escape_label(gpu_model);
    let now = elapsed.as_secs_f64();
    // Each GPU's joules and limit: a replica's shared evenly by its GPUs.
    let mut gpus: Vec<(f64, f64)> = Vec::new();
    for o in all {
        let idle = elapsed.saturating_sub(o.engine.busy).as_secs_f64();
        let joules = o.engine.busy_energy_j + idle * o.idle_w;
        let n = o.gpus.max(1);
        gpus.extend(std::iter::repeat_n((joules / f64::from(n), o.provisioned_w / f64::from(n)), n as usize));
    }
    // The mean power since the last scrape (since the start at the first),
    // in the engine's joules a wall-clock second: S times the engine's
    // watts at --speed S, as the limit reads S × TDP.
    let (before, at) = match seen.take().filter(|s| s.joules.len() == gpus.len() && now > s.at_s) {
        Some(s) => (s.joules, s.at_s),
        None => (vec![0.0; gpus.len()], 0.0),
    };
    let (mut energy, mut power, mut limit) = (String::new(), String::new(), String::new());
    for (gpu, &(joules, provisioned_w)) in gpus.iter().enumerate() {
        let labels = format!("gpu=\"{gpu}\",device=\"nvidia{gpu}\",modelName=\"{model}\"");
        let _ = writeln!(energy, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {:.0}", joules * 1e3);
        if now > at {
            let watts = (joules - before[gpu]).max(0.0) / (now - at) * speed;
            let _ = writeln!(power, "DCGM_FI_DEV_POWER_USAGE{{{labels}}} {watts:.3}");
        }
        let _ = writeln!(limit, "DCGM_FI_DEV_POWER_MGMT_LIMIT{{{labels}}} {}", provisioned_w * speed);
    }
    *seen = Some(EnergySeen { at_s: now, joules: gpus.iter().map(|g| g.0).collect() });
    format!(
        "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n\
         # TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n{energy}\
         # HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
         # TYPE DCGM_FI_DEV_POWER_USAGE gauge\n{power}\
         # HELP DCGM_FI_DEV_POWER_MGMT_LIMIT Power management limit (in W).\n\
         # TYPE DCGM_FI_DEV_POWER_MGMT_LIMIT gauge\n{limit}"
    )
}

/// The GPUs' energy counters at a scrape: the engine's elapsed seconds,
/// and each GPU's joules, in the order [`dcgm`] numbers them.
#[derive(Debug, Clone)]
pub(super) struct EnergySeen {
    at_s: f64,
    joules: Vec<f64>,
}

/// `--speed` as a gauge, `goodput_sim_speed`: its wall-clock latencies and
/// lateness are the engine's over it. A scraper reads the lateness in the
/// engine's time with it: a step 7.7 ms late on the wall clock at speed 50
/// is 385 ms of the engine's, far beyond the jitter the same 7.7 ms is at
/// speed 1.
pub(super) fn speed_metric(speed: f64) -> String {
    let name = "goodput_sim_speed";
    format!(
        "# HELP {name} How many times faster than the simulated engine's own time the server runs (--speed).\n\
         # TYPE {name} gauge\n{name} {speed:?}\n"
    )
}

// vLLM V1's bucket bounds (vllm/v1/metrics/loggers.py), so dashboards and
// quantile estimates read the same as against a real server.
pub(super) const TTFT_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
];
/// vLLM's bounds for `vllm:iteration_tokens_total` when it runs without CUDA
/// graphs (`build_cudagraph_buckets` under `enforce_eager`, its 8096
/// included; with graphs they are the graphs' capture sizes, which the
/// simulator has none of).
const ITERATION_TOKEN_BUCKETS: &[f64] =
    &[1.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8096.0];
/// vLLM's NIXL connector's transfer-time bounds (`nixl_connector.py`).
const NIXL_XFER_BUCKETS: &[f64] = &[0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0];
const ITL_BUCKETS: &[f64] =
    &[0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
/// From a tenth of a millisecond (a step on time) to seconds (a host that
/// stopped the process).
const LATENESS_BUCKETS: &[f64] =
    &[0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0];
const REQUEST_LATENCY_BUCKETS: &[f64] = &[
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
];

/// A Prometheus histogram: counts per bucket (not cumulative; the last is
/// `+Inf`), their sum and count.
#[derive(Debug, Clone)]
pub(super) struct Histogram {
    bounds: &'static [f64],
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub(super) fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: vec![0; bounds.len() + 1], sum: 0.0, count: 0 }
    }

    pub(super) fn observe(&mut self, d: Duration) {
        self.observe_value(d.as_secs_f64());
    }

    /// An observation that is not a time (a count).
    pub(super) fn observe_value(&mut self, v: f64) {
        let i = self.bounds.partition_point(|&b| b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// The series' lines (buckets, sum, count) under `labels`; the family's
    /// HELP and TYPE are the caller's.
    pub(super) fn render_series(&self, s: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cumulative += c;
            // `{:?}` writes 1.0, not 1, as Python's client does.
            let le = self.bounds.get(i).map_or("+Inf".to_string(), |b| format!("{b:?}"));
            let _ = writeln!(s, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        let _ = write!(s, "{name}_sum{{{labels}}} {:?}\n{name}_count{{{labels}}} {}\n", self.sum, self.count);
    }
}

pub(super) fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}
