//! The `engine` block of an estimate read back for the exporters: what the
//! simulated engine did (batches, preemptions, prefix hits, KV capacity) and
//! its KV use and queues over virtual time. Read leniently, like
//! `server_signals`: a block that cannot be read is reported, never fatal.

use crate::server::Figure;
use goodput_core::RunResult;
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SimulatedEngine {
    pub config: Value,
    pub steps: Option<f64>,
    pub mean_batch_seqs: Option<f64>,
    pub mean_batch_tokens: Option<f64>,
    pub max_batch_seqs: Option<f64>,
    pub preemptions: Option<f64>,
    pub prefix_cache_queries_tokens: Option<f64>,
    pub prefix_cache_hits_tokens: Option<f64>,
    pub prefix_cache_hit_rate: Option<f64>,
    pub kv_capacity_tokens: Option<f64>,
    pub max_num_seqs: Option<f64>,
    pub busy_s: Option<f64>,
    pub makespan_s: Option<f64>,
    pub kv_usage_max: Option<f64>,
    pub series: EngineSeries,
}

/// Samples over virtual time, one column each.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct EngineSeries {
    pub t_s: Vec<f64>,
    /// 0..1 of the KV capacity.
    pub kv_usage: Vec<Option<f64>>,
    pub running: Vec<Option<f64>>,
    pub waiting: Vec<Option<f64>>,
}

/// The run's `engine` block, if it has one; `Err` says why it could not be read.
pub fn of(r: &RunResult) -> Option<Result<SimulatedEngine, String>> {
    let v = r.engine.as_ref()?;
    Some(SimulatedEngine::deserialize(v).map_err(|e| format!("the engine block cannot be read: {e}")))
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

impl SimulatedEngine {
    /// What was simulated, in words: `Llama-3.1-8B on 1× H100 SXM · bf16 ·
    /// …`. Holds the document's strings: escape it for the format.
    pub fn config_line(&self) -> String {
        let c = &self.config;
        let text = |k: &str| match &c[k] {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            v => Some(v.to_string()),
        };
        let mut parts = Vec::new();
        match (text("model"), text("gpu")) {
            (Some(m), Some(g)) => parts.push(format!("{m} on {}× {g}", text("tp").unwrap_or("1".into()))),
            (Some(m), None) => parts.push(m),
            (None, Some(g)) => parts.push(g),
            (None, None) => {}
        }
        if let Some(p) = text("precision") {
            parts.push(p);
        }
        if let Some(kv) = text("kv_cache_dtype").filter(|k| k != "auto") {
            parts.push(format!("KV {kv}"));
        }
        if let Some(n) = text("max_num_batched_tokens") {
            parts.push(format!("max {n} batched tokens"));
        }
        if let Some(b) = c["enable_prefix_caching"].as_bool() {
            parts.push(if b { "prefix caching on" } else { "prefix caching off" }.into());
        }
        parts.join(" · ")
    }

    pub fn figures(&self) -> Vec<Figure> {
        let f = |label, value, unit, detail| Figure { label, value, unit, detail };
        let busy = match (self.busy_s, self.makespan_s) {
            (Some(b), Some(m)) if m > 0.0 => format!(" · busy {:.1}% of {m:.2} s", 100.0 * b / m),
            _ => String::new(),
        };
        vec![
            f(
                "mean batch",
                num(self.mean_batch_seqs, 1),
                "seqs",
                format!(
                    "{} tokens a step · max {} of {} seqs",
                    num(self.mean_batch_tokens, 0),
                    num(self.max_batch_seqs, 0),
                    num(self.max_num_seqs, 0)
                ),
            ),
            f("steps", num(self.steps, 0), "", format!("engine steps{busy}")),
            f("preemptions", num(self.preemptions, 0), "", "requests whose KV blocks were taken back".into()),
            f(
                "prefix-cache hit rate",
                pct(self.prefix_cache_hit_rate),
                "",
                format!(
                    "{} of {} prompt tokens looked up",
                    num(self.prefix_cache_hits_tokens, 0),
                    num(self.prefix_cache_queries_tokens, 0)
                ),
            ),
            f("KV capacity", num(self.kv_capacity_tokens, 0), "tokens", format!("peak use {}", pct(self.kv_usage_max))),
        ]
    }

    fn column(&self, col: &[Option<f64>]) -> Vec<(f64, f64)> {
        self.series.t_s.iter().zip(col).filter_map(|(&t, v)| Some((t, (*v)?))).collect()
    }

    pub fn kv_usage(&self) -> Vec<(f64, f64)> {
        self.column(&self.series.kv_usage)
    }

    pub fn running(&self) -> Vec<(f64, f64)> {
        self.column(&self.series.running)
    }

    pub fn waiting(&self) -> Vec<(f64, f64)> {
        self.column(&self.series.waiting)
    }

    /// `engine_series.csv`: the header (units in the names) and a row per sample.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
        let header = ["t_s", "kv_cache_usage_ratio", "running_requests", "waiting_requests"].map(String::from).to_vec();
        let s = &self.series;
        let at = |c: &[Option<f64>], i: usize| c.get(i).copied().flatten();
        let rows = (0..s.t_s.len())
            .map(|i| vec![Some(s.t_s[i]), at(&s.kv_usage, i), at(&s.running, i), at(&s.waiting, i)])
            .collect();
        (header, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn config_line_names_what_was_simulated() {
        let e = SimulatedEngine::deserialize(&json!({"config": {
            "model": "Llama-3.1-8B", "gpu": "H100 SXM", "tp": 2, "precision": "fp8", "kv_cache_dtype": "auto",
            "max_num_batched_tokens": 8192, "enable_prefix_caching": true
        }}))
        .unwrap();
        assert_eq!(e.config_line(), "Llama-3.1-8B on 2× H100 SXM · fp8 · max 8192 batched tokens · prefix caching on");
        assert_eq!(SimulatedEngine::default().config_line(), "");
    }

    #[test]
    fn series_and_table_keep_samples_aligned() {
        let e = SimulatedEngine::deserialize(&json!({"series": {
            "t_s": [0.5, 1.0, 1.5], "kv_usage": [0.1, 0.2, null], "running": [1, 2, 3], "waiting": [0, 0]
        }}))
        .unwrap();
        assert_eq!(e.kv_usage(), [(0.5, 0.1), (1.0, 0.2)]);
        assert_eq!(e.waiting().len(), 2);
        let (h, rows) = e.table();
        assert_eq!(h.len(), 4);
        assert_eq!(rows[2], [Some(1.5), None, Some(3.0), None]);
    }
}
