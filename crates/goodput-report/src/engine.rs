//! The `engine` block of an estimate as the exporters show it: what the
//! simulated engine did (batches, preemptions, prefix hits, KV capacity) and
//! its KV use and queues over virtual time (goodput-core's typed
//! [`SimulatedEngine`]).

use crate::server::Figure;
use goodput_core::doc::engine::{ReplicaShare, SimulatedEngine};
use goodput_core::RunResult;

/// The run's `engine` block, if it has one.
pub fn of(r: &RunResult) -> Option<&SimulatedEngine> {
    r.engine.as_ref()
}

/// A GPU family as the engine's notes name it (`cdna3`: CDNA3, `hopper`:
/// Hopper); another as recorded.
fn family_name(family: &str) -> String {
    match family {
        f if f.starts_with("cdna") => f.to_ascii_uppercase(),
        f => {
            let mut c = f.chars();
            c.next().map(|first| first.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        }
    }
}

fn num(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        Some(_) => "∞".into(),
        None => "-".into(),
    }
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or("-".into())
}

/// How the exporters read the block.
pub trait EngineView {
    /// What was simulated, in words: `Llama-3.1-8B on 1× H100 SXM · bf16 ·
    /// …`. Holds the document's strings: escape it for the format.
    fn config_line(&self) -> String;
    fn figures(&self) -> Vec<Figure>;
    fn kv_usage(&self) -> Vec<(f64, f64)>;
    fn running(&self) -> Vec<(f64, f64)>;
    fn waiting(&self) -> Vec<(f64, f64)>;
    /// `engine_series.csv`: the header (units in the names) and a row per sample.
    fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>);
}

impl EngineView for SimulatedEngine {
    fn config_line(&self) -> String {
        let c = &self.config;
        let given = |s: &str| (!s.is_empty()).then(|| s.to_string());
        let mut parts = Vec::new();
        // An expert-parallel group's data-parallel ranks share one
        // scheduler's experts: they are a replica's ranks, not replicas.
        let ranks = if c.pd.is_none() { goodput_core::doc::config::ep_ranks(c.tp, c.ep) } else { 1 };
        let of = if ranks > 1 { format!("{ranks} ranks of ") } else { String::new() };
        match (given(&c.model), given(&c.gpu)) {
            (Some(m), Some(g)) if c.pp > 1 => parts.push(format!("{m} on {of}{} stages of {}× {g}", c.pp, c.tp.max(1))),
            (Some(m), Some(g)) => parts.push(format!("{m} on {of}{}× {g}", c.tp.max(1))),
            (Some(m), None) => parts.push(m),
            (None, Some(g)) => parts.push(g),
            (None, None) => {}
        }
        let replicas = c.dp / ranks;
        if replicas > 1 {
            parts.push(match (&c.router, c.router_poll_s) {
                (Some(r), Some(s)) => format!("{replicas} replicas ({r}, loads polled every {s} s)"),
                (Some(r), None) => format!("{replicas} replicas ({r})"),
                // vLLM's front end balanced them, in the router's place.
                (None, _) if c.internal_lb => match c.api_server_count {
                    Some(n) if n > 1 => format!("{replicas} replicas (vLLM's internal balancing, {n} API servers)"),
                    _ => format!("{replicas} replicas (vLLM's internal balancing)"),
                },
                (None, _) => format!("{replicas} replicas"),
            });
        }
        if let (Some(pd), Some(pools)) = (&c.pd, c.pools_routed()) {
            parts.push(format!(
                "disaggregated {pools} · KV link {} Gb/s per GPU ({}), {} µs",
                pd.kv_link_gbps, pd.kv_link, pd.kv_link_latency_us
            ));
        }
        if ranks > 1 {
            parts.push(format!("EP {}: experts over {} GPUs", c.ep, c.ep));
        } else if c.ep > 1 {
            parts.push(format!("EP {}", c.ep));
        }
        parts.extend(given(&c.precision));
        if let Some(kv) = given(&c.kv_cache_dtype).filter(|k| k != "auto") {
            parts.push(format!("KV {kv}"));
        }
        if c.max_num_batched_tokens > 0 {
            // SGLang's DP attention splits its --chunked-prefill-size over the
            // ranks.
            let split = c.scheduler == "sglang" && ranks > 1 && c.enable_chunked_prefill;
            parts.push(match split {
                true => format!(
                    "max {} batched tokens ({} a rank)",
                    c.max_num_batched_tokens,
                    goodput_core::doc::config::dp_attention_share(c.max_num_batched_tokens, ranks)
                ),
                false => format!("max {} batched tokens", c.max_num_batched_tokens),
            });
        }
        if c != &Default::default() {
            parts.push(if c.enable_prefix_caching { "prefix caching on" } else { "prefix caching off" }.into());
        }
        match c.scheduler.as_str() {
            "trtllm" => parts.push("TensorRT-LLM scheduler".into()),
            "sglang" => parts.push(match &c.load_balance_method {
                // A dense model's replicas, where its controller picks them.
                Some(m) => format!("SGLang scheduler ({} by {m})", balanced(c)),
                None => "SGLang scheduler".into(),
            }),
            _ => {}
        }
        if c.mixed_batches == Some(false) {
            parts.push("prompts and decodes in separate steps".into());
        }
        if let Some(n) = c.scheduler_recv_interval {
            parts.push(format!("new requests taken every {n} decode steps"));
        }
        if let Some(n) = c.max_prefill_tokens {
            parts.push(format!("a step's prompts up to {n} tokens past the first"));
        }
        if let Some(a) = &c.mxfp4_activations {
            parts.push(goodput_core::doc::config::mxfp4_activation_words(a));
        }
        parts.extend(goodput_core::doc::config::batch_wait_words(
            c.batch_wait_timeout_iters.unwrap_or(0),
            c.batch_wait_max_tokens_ratio.unwrap_or(0.0),
        ));
        match c.async_scheduling {
            Some(true) => parts.push("scheduled a step ahead".into()),
            Some(false) => parts.push("each step scheduled after the last".into()),
            None => {}
        }
        if c.calibrated == Some(false) {
            // Whose constants, where the document says (a document written
            // before it did names none: CDNA4's had been said to be Hopper's,
            // where they were CDNA3's).
            parts.push(match c.constants_from.as_deref() {
                Some(f) => format!("uncalibrated ({}: {}'s constants)", c.gpu_family, family_name(f)),
                None => format!("uncalibrated ({})", c.gpu_family),
            });
        }
        parts.join(" · ")
    }

    fn figures(&self) -> Vec<Figure> {
        let f = |label, value, unit, detail| Figure { label, value, unit, detail };
        let (b, m) = (self.busy_s, self.makespan_s);
        let busy = if m > 0.0 { format!(" · busy {:.1}% of {m:.2} s", 100.0 * b / m) } else { String::new() };
        let mut figures = vec![
            f(
                "mean batch",
                num(Some(self.mean_batch_seqs), 1),
                "seqs",
                format!(
                    "{} tokens a step · max {} of {} seqs",
                    num(Some(self.mean_batch_tokens), 0),
                    num(Some(self.max_batch_seqs as f64), 0),
                    num(Some(self.max_num_seqs as f64), 0)
                ),
            ),
            f("steps", num(Some(self.steps as f64), 0), "", format!("engine steps{busy}")),
            f(
                self.preemptions_word(),
                num(Some(self.preemptions as f64), 0),
                "",
                "requests whose KV blocks were taken back".into(),
            ),
            f(
                "prefix-cache hit rate",
                pct(self.prefix_cache_hit_rate),
                "",
                format!(
                    "{} of {} prompt tokens looked up",
                    num(Some(self.prefix_cache_hits_tokens as f64), 0),
                    num(Some(self.prefix_cache_queries_tokens as f64), 0)
                ),
            ),
            f(
                "KV capacity",
                num(Some(self.kv_capacity_tokens as f64), 0),
                "tokens",
                format!(
                    "peak use {}{}",
                    pct(Some(self.kv_usage_max)),
                    self.kv_rank_tokens
                        .map(|t| format!("; {} tokens a rank, the most one request holds", num(Some(t as f64), 0)))
                        .unwrap_or_default()
                ),
            ),
        ];
        if !self.replicas.is_empty() {
            for (pool, replicas) in pools(self) {
                figures.push(replica_figure(pool, replicas, self.makespan_s));
            }
        }
        figures
    }

    fn kv_usage(&self) -> Vec<(f64, f64)> {
        column(&self.series.t_s, self.series.kv_usage.iter().copied())
    }

    fn running(&self) -> Vec<(f64, f64)> {
        column(&self.series.t_s, self.series.running.iter().map(|&n| n as f64))
    }

    fn waiting(&self) -> Vec<(f64, f64)> {
        column(&self.series.t_s, self.series.waiting.iter().map(|&n| n as f64))
    }

    fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
        let header = ["t_s", "kv_cache_usage_ratio", "running_requests", "waiting_requests"].map(String::from).to_vec();
        let s = &self.series;
        let rows = (0..s.t_s.len())
            .map(|i| {
                vec![
                    Some(s.t_s[i]),
                    s.kv_usage.get(i).copied(),
                    s.running.get(i).map(|&n| n as f64),
                    s.waiting.get(i).map(|&n| n as f64),
                ]
            })
            .collect();
        (header, rows)
    }
}

/// How evenly the router spread the load: the busiest replica's requests
/// over the mean (1.00: even; `None` before any request), and each
/// replica's requests with its busy share (the first eight, then a count).
/// What SGLang's `load_balance_method` picks among, in words: a dense
/// model's replicas, or the ranks of its DP attention.
pub(crate) fn balanced(c: &goodput_core::doc::config::EngineSettings) -> &'static str {
    if c.balances_replicas() {
        "replicas"
    } else {
        "ranks"
    }
}

pub(crate) fn replica_spread(replicas: &[ReplicaShare], makespan_s: f64) -> (Option<f64>, String) {
    let n = replicas.len() as f64;
    let mean = replicas.iter().map(|r| r.requests as f64).sum::<f64>() / n;
    let max = replicas.iter().map(|r| r.requests).max().unwrap_or(0) as f64;
    let shown = 8;
    let mut each: Vec<String> = replicas
        .iter()
        .take(shown)
        .map(|r| {
            let busy =
                if makespan_s > 0.0 { format!(" ({:.0}% busy)", 100.0 * r.busy_s / makespan_s) } else { String::new() };
            format!("{}{busy}", r.requests)
        })
        .collect();
    if replicas.len() > shown {
        each.push(format!("… {} more", replicas.len() - shown));
    }
    ((mean > 0.0).then(|| max / mean), each.join(" · "))
}

/// The engine's instances by pool: the prefill and the decode instances
/// apart when disaggregated (they hold different work), else the replicas.
pub(crate) fn pools(e: &SimulatedEngine) -> Vec<(&'static str, &[ReplicaShare])> {
    match &e.config.pd {
        Some(pd) if e.replicas.len() == (pd.prefill + pd.decode) as usize => {
            let (p, d) = e.replicas.split_at(pd.prefill as usize);
            vec![("prefill instances", p), ("decode instances", d)]
        }
        _ => vec![("replicas", &e.replicas[..])],
    }
}

fn replica_figure(pool: &'static str, replicas: &[ReplicaShare], makespan_s: f64) -> Figure {
    let (spread, each) = replica_spread(replicas, makespan_s);
    Figure {
        label: match pool {
            "prefill instances" => "prefill spread",
            "decode instances" => "decode spread",
            _ => "replica spread",
        },
        value: spread.map_or("—".into(), |x| format!("{x:.2}")),
        unit: "× mean",
        detail: format!("the busiest replica's requests over the mean; requests each: {each}"),
    }
}

/// (t, v) pairs, as far as both columns go.
fn column(t: &[f64], values: impl Iterator<Item = f64>) -> Vec<(f64, f64)> {
    t.iter().copied().zip(values).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn engine(v: Value) -> SimulatedEngine {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn config_line_names_what_was_simulated() {
        let e = engine(json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 2, "precision": "fp8", "kv_cache_dtype": "auto",
            "max_num_batched_tokens": 8192, "enable_prefix_caching": true
        }}));
        assert_eq!(e.config_line(), "Llama-3.1-8B on 2× H100 SXM · fp8 · max 8192 batched tokens · prefix caching on");
        assert_eq!(SimulatedEngine::default().config_line(), "");
        let e = engine(json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "MI300X", "tp": 1, "precision": "fp8", "enable_prefix_caching": true,
            "scheduler": "trtllm", "gpu_family": "cdna3", "calibrated": false
        }}));
        // A document that names no family's constants (written before
        // they were recorded) is not told whose.
        assert_eq!(
            e.config_line(),
            "Llama-3.1-8B on 1× MI300X · fp8 · prefix caching on · TensorRT-LLM scheduler · uncalibrated (cdna3)"
        );
        // One that does names them as the engine's notes do.
        for (gpu, family, from, whose) in
            [("MI355X", "cdna4", "cdna3", "CDNA3"), ("A100 80GB", "ampere", "hopper", "Hopper")]
        {
            let e = engine(json!({"config": {
                "model": "Llama-3.1-8B", "gpu": gpu, "tp": 1, "precision": "fp8",
                "gpu_family": family, "calibrated": false, "constants_from": from
            }}));
            assert_eq!(
                e.config_line(),
                format!(
                    "Llama-3.1-8B on 1× {gpu} · fp8 · prefix caching off · uncalibrated ({family}: {whose}'s constants)"
                )
            );
        }
        let e = engine(json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "precision": "fp8", "enable_prefix_caching": true,
            "scheduler": "sglang", "mixed_batches": false, "async_scheduling": true
        }}));
        assert_eq!(
            e.config_line(),
            "Llama-3.1-8B on 1× H100 SXM · fp8 · prefix caching on · SGLang scheduler · prompts and decodes in separate \
             steps · scheduled a step ahead"
        );
        // SGLang's scheduler retracts where vLLM's preempts: its figure says so.
        let label = |scheduler: &str| {
            let e = engine(json!({"config": {"scheduler": scheduler}, "preemptions": 3}));
            e.figures().into_iter().find(|f| f.value == "3").map(|f| f.label)
        };
        assert_eq!((label("sglang"), label("vllm")), (Some("retractions"), Some("preemptions")));
        // Replicas behind a router, and one whose loads are polled.
        let replicas = |poll: Value| {
            engine(json!({"config": {
                "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "dp": 4, "router": "power-of-two",
                "router_poll_s": poll, "precision": "bf16", "enable_prefix_caching": true
            }}))
            .config_line()
        };
        assert_eq!(
            replicas(Value::Null),
            "Llama-3.1-8B on 1× H100 SXM · 4 replicas (power-of-two) · bf16 · prefix caching on"
        );
        assert_eq!(
            replicas(json!(10.0)),
            "Llama-3.1-8B on 1× H100 SXM · 4 replicas (power-of-two, loads polled every 10 s) · bf16 · prefix caching on"
        );
        // vLLM's own balancing of one server's replicas, in the router's place.
        let own = engine(json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "dp": 4, "internal_lb": true,
            "precision": "bf16", "enable_prefix_caching": true
        }}));
        assert_eq!(
            own.config_line(),
            "Llama-3.1-8B on 1× H100 SXM · 4 replicas (vLLM's internal balancing) · bf16 · prefix caching on"
        );
        let fronts = engine(json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "dp": 4, "internal_lb": true,
            "api_server_count": 4, "precision": "bf16"
        }}));
        assert!(fronts.config_line().contains("4 replicas (vLLM's internal balancing, 4 API servers)"));
        // Each pool's router, where it is not least-loaded.
        let pools = |router: &str| {
            engine(json!({"config": {
                "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 1, "router": router, "precision": "bf16",
                "pd": {"prefill": 2, "decode": 1, "kv_link": "nvlink", "kv_link_gbps": 3600.0,
                       "kv_link_latency_us": 10.0}
            }}))
            .config_line()
        };
        assert!(pools("prefix-aware").contains("disaggregated 2 prefill + 1 decode instances (prefix-aware) · KV link"));
        assert!(pools("least-loaded").contains("disaggregated 2 prefill + 1 decode instances · KV link"));
        // An expert-parallel group's data-parallel ranks are one engine's
        // ranks: eight ranks in groups of four are two replicas, four in one
        // group none (the line had said "4 replicas · EP 4").
        let ranks = |dp: u32, tp: u32| {
            engine(json!({"config": {
                "model": "Qwen3-30B-A3B", "gpu": "H100 SXM", "tp": tp, "ep": 4, "dp": dp,
                "router": "least-loaded", "precision": "fp8"
            }}))
            .config_line()
        };
        assert_eq!(
            ranks(4, 1),
            "Qwen3-30B-A3B on 4 ranks of 1× H100 SXM · EP 4: experts over 4 GPUs · fp8 · prefix caching \
             off"
        );
        assert_eq!(
            ranks(8, 1),
            "Qwen3-30B-A3B on 4 ranks of 1× H100 SXM · 2 replicas (least-loaded) · EP 4: experts over 4 GPUs · fp8 · prefix caching off"
        );
        // SGLang's DP attention gives each rank its share of the budget.
        let sglang = engine(json!({"config": {
            "model": "Qwen3-30B-A3B", "gpu": "H100 SXM", "tp": 1, "ep": 4, "dp": 4, "precision": "fp8",
            "scheduler": "sglang", "max_num_batched_tokens": 8192, "enable_chunked_prefill": true
        }}));
        assert!(sglang.config_line().contains("max 8192 batched tokens (2048 a rank)"), "{}", sglang.config_line());
        assert!(sglang.config_line().ends_with("· SGLang scheduler"), "{}", sglang.config_line());
        // A load-balance method other than SGLang's default is named.
        let by_tokens = engine(json!({"config": {
            "model": "Qwen3-30B-A3B", "gpu": "H100 SXM", "tp": 1, "ep": 4, "dp": 4, "precision": "fp8",
            "scheduler": "sglang", "load_balance_method": "total-tokens"
        }}));
        assert!(
            by_tokens.config_line().ends_with("· SGLang scheduler (ranks by total-tokens)"),
            "{}",
            by_tokens.config_line()
        );
        // TP = EP: one rank, the replicas as before.
        assert_eq!(
            ranks(2, 4),
            "Qwen3-30B-A3B on 4× H100 SXM · 2 replicas (least-loaded) · EP 4 · fp8 · prefix caching off"
        );
    }

    #[test]
    fn series_and_table_keep_samples_aligned() {
        let e = engine(json!({"series": {
            "t_s": [0.5, 1.0, 1.5], "kv_usage": [0.1, 0.2], "running": [1, 2, 3], "waiting": [0, 0]
        }}));
        assert_eq!(e.kv_usage(), [(0.5, 0.1), (1.0, 0.2)]);
        assert_eq!(e.waiting().len(), 2);
        let (h, rows) = e.table();
        assert_eq!(h.len(), 4);
        assert_eq!(rows[2], [Some(1.5), None, Some(3.0), None]);
    }
}
