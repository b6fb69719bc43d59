//! The `server_signals` block read back for the exporters: what the
//! server's own metrics said during the run, its series over the run's clock
//! and the client/server cross-check. The block is JSON in the document (it
//! may come from any goodput version, or be edited), so it is read leniently
//! and a block that cannot be read is reported, never fatal.

use crate::format;
use goodput_core::{Distribution, RunResult};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The most points a server time series is drawn with; longer runs are
/// thinned to every n-th scrape (the CSV keeps them all).
pub const SERIES_POINTS: usize = 1500;

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct ServerSignals {
    pub urls: Vec<String>,
    pub interval_s: Option<f64>,
    /// Scrapes over the whole run, the window's and those around it.
    pub scrapes: Option<f64>,
    pub failed_scrapes: Option<f64>,
    pub parse_errors: Option<f64>,
    pub last_error: Option<String>,
    /// The inference engine recognised from metric names (`vllm`, `sglang`, …).
    pub engine: Option<String>,
    pub window: SignalWindow,
    pub cross_check: Option<CrossCheck>,
}

/// The window summary (goodput-load's `WindowSummary`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SignalWindow {
    pub scrapes: Option<f64>,
    pub span_s: Option<f64>,
    pub sources: Vec<String>,
    pub gauges: BTreeMap<String, Distribution>,
    pub counters: BTreeMap<String, Counter>,
    /// In seconds.
    pub histograms: BTreeMap<String, Histogram>,
    pub prefix_cache_hit_rate: Option<f64>,
    pub energy_per_output_token_joules: Option<f64>,
    pub series: SignalSeries,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Counter {
    pub delta: Option<f64>,
    pub rate_per_s: Option<f64>,
    pub resets: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct Histogram {
    pub count: Option<f64>,
    pub sum: Option<f64>,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    /// The buckets the p50 and the p99 lie in, `[lower, upper]` seconds:
    /// the interpolated values can be anywhere in them.
    pub p50_bucket: Option<[f64; 2]>,
    pub p99_bucket: Option<[f64; 2]>,
}

/// Columns over the scrapes: a gauge's value at `t_s[i]`, a counter's rate
/// since the scrape before (`None` for the first and where absent).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct SignalSeries {
    pub t_s: Vec<f64>,
    pub gauges: BTreeMap<String, Vec<Option<f64>>>,
    pub rates_per_s: BTreeMap<String, Vec<Option<f64>>>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
pub struct CrossCheck {
    pub client_ttft_p50_ms: Option<f64>,
    pub server_ttft_p50_ms: Option<f64>,
    /// client − server TTFT, of the means or of the p50s (`ttft_gap_basis`).
    pub ttft_gap_ms: Option<f64>,
    pub ttft_gap_basis: Option<String>,
    pub client_ttft_mean_ms: Option<f64>,
    pub server_ttft_mean_ms: Option<f64>,
    pub server_queue_mean_ms: Option<f64>,
    pub client_output_tokens: Option<f64>,
    pub server_generation_tokens: Option<f64>,
    pub client_completed: Option<f64>,
    pub server_requests_succeeded: Option<f64>,
    pub client_not_completed: Option<f64>,
    pub server_requests_failed: Option<f64>,
    /// Share of prompt tokens served from the prefix cache: by the client's
    /// usage blocks, and by the server's counters.
    #[serde(default)]
    pub client_cached_prompt_share: Option<f64>,
    #[serde(default)]
    pub server_prefix_cache_hit_rate: Option<f64>,
    pub notes: Vec<String>,
}

/// The run's `server_signals` block, if it has one; `Err` says why it could
/// not be read.
pub fn of(r: &RunResult) -> Option<Result<ServerSignals, String>> {
    let v = r.server_signals.as_ref()?;
    Some(ServerSignals::deserialize(v).map_err(|e| format!("the server_signals block cannot be read: {e}")))
}

/// Gauges in the order a reader expects them; any other gauge the document
/// holds follows in name order.
const GAUGE_ORDER: [&str; 7] = [
    "running_requests",
    "waiting_requests",
    "kv_cache_usage_ratio",
    "prefix_cache_hit_rate_reported",
    "gpu_utilization_ratio",
    "gpu_memory_used_bytes",
    "gpu_power_watts",
];

const RATE_ORDER: [&str; 8] = [
    "generation_tokens",
    "prompt_tokens",
    "prefix_cache_query_tokens",
    "prefix_cache_hit_tokens",
    "preemptions",
    "requests_succeeded",
    "requests_failed",
    "gpu_energy_joules",
];

fn ordered<'a, V>(known: &[&'a str], map: &'a BTreeMap<String, V>) -> Vec<&'a str> {
    let mut out: Vec<&str> = known.iter().copied().filter(|k| map.contains_key(*k)).collect();
    out.extend(map.keys().map(String::as_str).filter(|k| !known.contains(k)));
    out
}

/// One headline figure: a card in HTML, a row in Markdown. Every field is
/// goodput's own wording and numbers, never text from the document.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub label: &'static str,
    pub value: String,
    pub unit: &'static str,
    pub detail: String,
}

fn fig(label: &'static str, value: String, unit: &'static str, detail: String) -> Figure {
    Figure { label, value, unit, detail }
}

fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or("-".into())
}

fn num(v: Option<f64>, decimals: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.decimals$}"),
        Some(_) => "∞".into(),
        None => "-".into(),
    }
}

fn secs_ms(v: Option<f64>) -> String {
    format::ms(v.map(|s| s * 1e3))
}

impl ServerSignals {
    pub fn gauge(&self, name: &str) -> Option<&Distribution> {
        self.window.gauges.get(name)
    }

    pub fn counter(&self, name: &str) -> Option<&Counter> {
        self.window.counters.get(name)
    }

    pub fn histogram(&self, name: &str) -> Option<&Histogram> {
        self.window.histograms.get(name)
    }

    /// The headline figures the window holds, in reading order; empty when
    /// the server exposed nothing goodput recognises.
    pub fn figures(&self) -> Vec<Figure> {
        let mut out = Vec::new();
        for (name, label) in [("running_requests", "running requests"), ("waiting_requests", "waiting requests")] {
            if let Some(d) = self.gauge(name) {
                out.push(fig(
                    label,
                    num(d.mean, 1),
                    "mean",
                    format!("peak {} · p50 {}", num(d.max, 0), num(d.p(50.0), 1)),
                ));
            }
        }
        if let Some(d) = self.gauge("kv_cache_usage_ratio") {
            out.push(fig("KV-cache use", pct(d.max), "peak", format!("p95 {} · mean {}", pct(d.p(95.0)), pct(d.mean))));
        }
        let delta = |name: &str| self.counter(name).and_then(|c| c.delta);
        if let Some(rate) = self.window.prefix_cache_hit_rate {
            out.push(fig(
                "prefix-cache hit rate",
                pct(Some(rate)),
                "",
                format!(
                    "{} of {} prompt tokens looked up",
                    num(delta("prefix_cache_hit_tokens"), 0),
                    num(delta("prefix_cache_query_tokens"), 0)
                ),
            ));
        } else if let Some(d) = self.gauge("prefix_cache_hit_rate_reported") {
            out.push(fig(
                "prefix-cache hit rate",
                pct(d.mean),
                "reported",
                "the engine's own gauge, averaged over its own period".into(),
            ));
        }
        if let Some(c) = self.counter("preemptions") {
            let mut detail = format!("{} per s", num(c.rate_per_s, 2));
            if c.resets.unwrap_or(0.0) > 0.0 {
                detail.push_str(&format!(" · {} counter resets", num(c.resets, 0)));
            }
            out.push(fig("preemptions", num(c.delta, 0), "", detail));
        }
        if let Some(c) = self.counter("generation_tokens") {
            let mut detail = format!("{} tokens over {} s", num(c.delta, 0), num(self.window.span_s, 2));
            if let Some(p) = self.counter("prompt_tokens").and_then(|p| p.rate_per_s) {
                detail.push_str(&format!(" · prompt {} tok/s", num(Some(p), 1)));
            }
            out.push(fig("generation tokens/s", num(c.rate_per_s, 1), "tok/s", detail));
        }
        for (name, mean_label, p50_label) in [
            ("ttft_seconds", "server TTFT mean", "server TTFT p50"),
            ("itl_seconds", "server ITL mean", "server ITL p50"),
            ("queue_seconds", "server queue mean", "server queue p50"),
        ] {
            if let Some(h) = self.histogram(name) {
                // The mean is exact (from `_sum`). A percentile lies anywhere
                // in its bucket, which can be far wider than the values
                // (vLLM's queue-time buckets start at 300 ms, its ITL ones at
                // 10 ms), so it is given as its bucket where that is known.
                let at = |p: &str, bucket: Option<[f64; 2]>, v: Option<f64>| match bucket {
                    Some([lo, hi]) => format!("{p} in the {}–{} ms bucket", format::bound_ms(lo), format::bound_ms(hi)),
                    None => format!("{p} {} ms", secs_ms(v)),
                };
                let detail = format!(
                    "{} · {} · {} observations",
                    at("p50", h.p50_bucket, h.p50),
                    at("p99", h.p99_bucket, h.p99),
                    num(h.count, 0)
                );
                out.push(match h.mean {
                    Some(m) => fig(mean_label, secs_ms(Some(m)), "ms", detail),
                    None => fig(p50_label, secs_ms(h.p50), "ms", detail),
                });
            }
        }
        if let Some(d) = self.gauge("gpu_utilization_ratio") {
            out.push(fig("GPU utilisation", pct(d.mean), "mean", format!("peak {}", pct(d.max))));
        }
        if let Some(d) = self.gauge("gpu_power_watts") {
            let mut detail = format!("peak {} W", num(d.max, 0));
            if let Some(m) = self.gauge("gpu_memory_used_bytes").and_then(|m| m.max) {
                detail.push_str(&format!(" · memory peak {:.1} GiB", m / (1u64 << 30) as f64));
            }
            out.push(fig("GPU power", num(d.mean, 0), "W mean", detail));
        } else if let Some(m) = self.gauge("gpu_memory_used_bytes") {
            out.push(fig("GPU memory", num(m.max.map(|b| b / (1u64 << 30) as f64), 1), "GiB peak", String::new()));
        }
        if let Some(j) = self.window.energy_per_output_token_joules {
            out.push(fig(
                "energy per output token",
                num(Some(j), 3),
                "J",
                "GPU energy over generated tokens, every GPU the exporter reports".into(),
            ));
        }
        out
    }

    /// The scrape indices drawn: all of them, or every n-th past
    /// [`SERIES_POINTS`].
    fn drawn(&self) -> impl Iterator<Item = usize> {
        let n = self.window.series.t_s.len();
        (0..n).step_by(n.div_ceil(SERIES_POINTS).max(1))
    }

    /// True when the chart series are thinned.
    pub fn thinned(&self) -> bool {
        self.window.series.t_s.len() > SERIES_POINTS
    }

    fn column(&self, col: Option<&Vec<Option<f64>>>) -> Vec<(f64, f64)> {
        let Some(col) = col else { return Vec::new() };
        let t = &self.window.series.t_s;
        self.drawn().filter_map(|i| Some((t[i], (*col.get(i)?)?))).collect()
    }

    /// (t_s, value) of a gauge, for a chart.
    pub fn gauge_series(&self, name: &str) -> Vec<(f64, f64)> {
        self.column(self.window.series.gauges.get(name))
    }

    /// (t_s, rate since the scrape before) of a counter, for a chart.
    pub fn rate_series(&self, name: &str) -> Vec<(f64, f64)> {
        self.column(self.window.series.rates_per_s.get(name))
    }

    /// Every series as columns: the header (units in the names: gauges carry
    /// theirs, rates end in `_per_s`) and one row per scrape.
    pub fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
        let s = &self.window.series;
        let gauges = ordered(&GAUGE_ORDER, &s.gauges);
        let rates = ordered(&RATE_ORDER, &s.rates_per_s);
        let mut header = vec!["t_s".to_string()];
        header.extend(gauges.iter().map(|g| g.to_string()));
        header.extend(rates.iter().map(|r| format!("{r}_per_s")));
        let cell = |col: Option<&Vec<Option<f64>>>, i: usize| col.and_then(|c| c.get(i).copied().flatten());
        let rows = (0..s.t_s.len())
            .map(|i| {
                let mut row = vec![Some(s.t_s[i])];
                row.extend(gauges.iter().map(|g| cell(s.gauges.get(*g), i)));
                row.extend(rates.iter().map(|r| cell(s.rates_per_s.get(*r), i)));
                row
            })
            .collect();
        (header, rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signals(v: serde_json::Value) -> ServerSignals {
        ServerSignals::deserialize(&v).unwrap()
    }

    #[test]
    fn reads_a_sparse_block_and_says_what_it_cannot_read() {
        let s = signals(json!({"urls": ["http://x/metrics"], "scrapes": 3, "window": {"gauges": {}}}));
        assert_eq!(s.urls, ["http://x/metrics"]);
        assert!(s.figures().is_empty());
        assert!(s.cross_check.is_none());
        let bad = json!({"window": {"gauges": {"running_requests": {"count": 1, "p50x": 3}}}});
        assert!(ServerSignals::deserialize(&bad).is_err());
    }

    #[test]
    fn series_skip_gaps_and_table_keeps_every_scrape() {
        let s = signals(json!({"window": {"series": {
            "t_s": [1.0, 2.0, 3.0],
            "gauges": {"zeta": [1.0, 2.0, 3.0], "waiting_requests": [0.0, null, 2.0], "running_requests": [4.0, 4.0]},
            "rates_per_s": {"generation_tokens": [null, 100.0, 120.0]}
        }}}));
        assert_eq!(s.gauge_series("waiting_requests"), [(1.0, 0.0), (3.0, 2.0)]);
        assert_eq!(s.gauge_series("running_requests"), [(1.0, 4.0), (2.0, 4.0)], "a short column ends early");
        assert_eq!(s.rate_series("generation_tokens"), [(2.0, 100.0), (3.0, 120.0)]);
        let (header, rows) = s.table();
        assert_eq!(header, ["t_s", "running_requests", "waiting_requests", "zeta", "generation_tokens_per_s"]);
        assert_eq!(rows[1], [Some(2.0), Some(4.0), None, Some(2.0), Some(100.0)]);
        assert_eq!(rows[2][1], None);
    }

    #[test]
    fn long_series_are_thinned_for_charts() {
        let n = 2 * SERIES_POINTS + 10;
        let t: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let s = signals(json!({"window": {"series": {"t_s": t, "gauges": {"running_requests": t}}}}));
        let pts = s.gauge_series("running_requests");
        assert!(s.thinned() && pts.len() <= SERIES_POINTS && pts.len() > SERIES_POINTS / 2);
        assert_eq!(pts[1].0 - pts[0].0, 3.0);
        assert_eq!(s.table().1.len(), n);
    }
}
