//! The `server_signals` block as the exporters show it: what the server's
//! own metrics said during the run (goodput-core's typed
//! [`ServerSignals`]), as headline figures, chart series and a table.

use crate::format;
use goodput_core::prometheus::scrape::{CounterSignal, GaugeSignal, HistogramSignal, ServerSignals};
use goodput_core::RunResult;
use std::collections::BTreeMap;

/// The most points a server time series is drawn with; longer runs are
/// thinned to every n-th scrape (the CSV keeps them all).
pub const SERIES_POINTS: usize = 1500;

/// The run's `server_signals` block, if it has one.
pub fn of(r: &RunResult) -> Option<&ServerSignals> {
    r.server_signals.as_ref()
}

/// Gauges in the order a reader expects them; any other gauge the document
/// holds follows in name order.
const GAUGE_ORDER: [GaugeSignal; 7] = [
    GaugeSignal::RunningRequests,
    GaugeSignal::WaitingRequests,
    GaugeSignal::KvCacheUsage,
    GaugeSignal::PrefixCacheHitRateReported,
    GaugeSignal::GpuUtilization,
    GaugeSignal::GpuMemoryUsed,
    GaugeSignal::GpuPower,
];

const RATE_ORDER: [CounterSignal; 8] = [
    CounterSignal::GenerationTokens,
    CounterSignal::PromptTokens,
    CounterSignal::PrefixCacheQueries,
    CounterSignal::PrefixCacheHits,
    CounterSignal::Preemptions,
    CounterSignal::RequestsSucceeded,
    CounterSignal::RequestsFailed,
    CounterSignal::GpuEnergy,
];

/// The keys of `map` in reading order: `known` first, the rest after.
fn ordered<K: Ord + Copy, V>(known: &[K], map: &BTreeMap<K, V>) -> Vec<K> {
    let mut out: Vec<K> = known.iter().copied().filter(|k| map.contains_key(k)).collect();
    out.extend(map.keys().copied().filter(|k| !known.contains(k)));
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

/// How the exporters read the block.
pub trait SignalsView {
    /// The headline figures the window holds, in reading order; empty when
    /// the server exposed nothing goodput recognises.
    fn figures(&self) -> Vec<Figure>;
    /// True when the chart series are thinned.
    fn thinned(&self) -> bool;
    /// (t_s, value) of a gauge, for a chart.
    fn gauge_series(&self, g: GaugeSignal) -> Vec<(f64, f64)>;
    /// (t_s, rate since the scrape before) of a counter, for a chart.
    fn rate_series(&self, c: CounterSignal) -> Vec<(f64, f64)>;
    /// Every series as columns: the header (units in the names: gauges
    /// carry theirs, rates end in `_per_s`) and one row per scrape.
    fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>);
}

impl SignalsView for ServerSignals {
    fn figures(&self) -> Vec<Figure> {
        use CounterSignal as C;
        use GaugeSignal as G;
        use HistogramSignal as H;
        let gauge = |g| self.window.gauges.get(&g);
        let counter = |c| self.window.counters.get(&c);
        let histogram = |h| self.window.histograms.get(&h);
        let mut out = Vec::new();
        for (name, label) in [(G::RunningRequests, "running requests"), (G::WaitingRequests, "waiting requests")] {
            if let Some(d) = gauge(name) {
                out.push(fig(
                    label,
                    num(d.mean, 1),
                    "mean",
                    format!("peak {} · p50 {}", num(d.max, 0), num(d.p(50.0), 1)),
                ));
            }
        }
        if let Some(d) = gauge(G::KvCacheUsage) {
            // Of the cache's tokens where the server says how many.
            let of =
                gauge(G::KvCacheTokens).and_then(|t| t.max).map(|t| format!(" · of {t:.0} tokens")).unwrap_or_default();
            out.push(fig(
                "KV-cache use",
                pct(d.max),
                "peak",
                format!("p95 {} · mean {}{of}", pct(d.p(95.0)), pct(d.mean)),
            ));
        }
        let delta = |c| counter(c).map(|c| c.delta);
        if let Some(rate) = self.window.prefix_cache_hit_rate {
            out.push(fig(
                "prefix-cache hit rate",
                pct(Some(rate)),
                "",
                format!(
                    "{} of {} prompt tokens looked up",
                    num(delta(C::PrefixCacheHits), 0),
                    num(delta(C::PrefixCacheQueries), 0)
                ),
            ));
        } else if let Some(d) = gauge(G::PrefixCacheHitRateReported) {
            out.push(fig(
                "prefix-cache hit rate",
                pct(d.mean),
                "reported",
                "the engine's own gauge, averaged over its own period".into(),
            ));
        }
        if let Some(c) = counter(C::Preemptions) {
            let mut detail = format!("{} per s", num(c.rate_per_s, 2));
            if c.resets > 0 {
                detail.push_str(&format!(" · {} counter resets", c.resets));
            }
            out.push(fig("preemptions", num(Some(c.delta), 0), "", detail));
        }
        if let Some(c) = counter(C::GenerationTokens) {
            let mut detail = format!("{} tokens over {} s", num(Some(c.delta), 0), num(Some(self.window.span_s), 2));
            if let Some(p) = counter(C::PromptTokens).and_then(|p| p.rate_per_s) {
                detail.push_str(&format!(" · prompt {} tok/s", num(Some(p), 1)));
            }
            out.push(fig("generation tokens/s", num(c.rate_per_s, 1), "tok/s", detail));
        }
        for (name, mean_label, p50_label) in [
            (H::Ttft, "server TTFT mean", "server TTFT p50"),
            (H::Itl, "server ITL mean", "server ITL p50"),
            (H::Queue, "server queue mean", "server queue p50"),
        ] {
            if let Some(h) = histogram(name) {
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
                    num(Some(h.count), 0)
                );
                out.push(match h.mean {
                    Some(m) => fig(mean_label, secs_ms(Some(m)), "ms", detail),
                    None => fig(p50_label, secs_ms(h.p50), "ms", detail),
                });
            }
        }
        if let Some(sd) = &self.window.spec_decode {
            let mut detail = match sd.mean_accepted_length {
                Some(l) => format!("{} tokens a step, the bonus included", num(Some(l), 2)),
                None => String::new(),
            };
            if !sd.acceptance_by_position.is_empty() {
                let by: Vec<String> = sd.acceptance_by_position.iter().map(|a| pct(Some(*a))).collect();
                detail.push_str(&format!(" · by position {}", by.join(" / ")));
            }
            if sd.basis == "gauges" {
                detail.push_str(" · the engine's own gauges");
            }
            out.push(fig("draft acceptance", pct(sd.acceptance_rate), "", detail));
        }
        if let Some(kv) = self.window.kv_transfer_mean_s {
            let mut detail = String::from("prefill to decode pool");
            for (g, label) in
                [(G::PdPrefillWaiting, "prefill pool waiting"), (G::PdDecodeWaiting, "decode pool waiting")]
            {
                if let Some(d) = gauge(g) {
                    detail.push_str(&format!(" · {label} {} mean", num(d.mean, 1)));
                }
            }
            out.push(fig("KV transfer mean", secs_ms(Some(kv)), "ms", detail));
        }
        if let Some(d) = gauge(G::GpuUtilization) {
            out.push(fig("GPU utilisation", pct(d.mean), "mean", format!("peak {}", pct(d.max))));
        }
        if let Some(d) = gauge(G::GpuPower) {
            let mut detail = format!("peak {} W", num(d.max, 0));
            if let Some(m) = gauge(G::GpuMemoryUsed).and_then(|m| m.max) {
                detail.push_str(&format!(" · memory peak {:.1} GiB", m / (1u64 << 30) as f64));
            }
            out.push(fig("GPU power", num(d.mean, 0), "W mean", detail));
        } else if let Some(m) = gauge(G::GpuMemoryUsed) {
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

    fn thinned(&self) -> bool {
        self.window.series.t_s.len() > SERIES_POINTS
    }

    fn gauge_series(&self, g: GaugeSignal) -> Vec<(f64, f64)> {
        column(self, self.window.series.gauges.get(&g))
    }

    fn rate_series(&self, c: CounterSignal) -> Vec<(f64, f64)> {
        column(self, self.window.series.rates_per_s.get(&c))
    }

    fn table(&self) -> (Vec<String>, Vec<Vec<Option<f64>>>) {
        let s = &self.window.series;
        let gauges = ordered(&GAUGE_ORDER, &s.gauges);
        let rates = ordered(&RATE_ORDER, &s.rates_per_s);
        let mut header = vec!["t_s".to_string()];
        header.extend(gauges.iter().map(|g| g.name().to_string()));
        header.extend(rates.iter().map(|r| format!("{}_per_s", r.name())));
        let cell = |col: Option<&Vec<Option<f64>>>, i: usize| col.and_then(|c| c.get(i).copied().flatten());
        let rows = (0..s.t_s.len())
            .map(|i| {
                let mut row = vec![Some(s.t_s[i])];
                row.extend(gauges.iter().map(|g| cell(s.gauges.get(g), i)));
                row.extend(rates.iter().map(|r| cell(s.rates_per_s.get(r), i)));
                row
            })
            .collect();
        (header, rows)
    }
}

/// The scrape indices drawn: all of them, or every n-th past
/// [`SERIES_POINTS`].
fn drawn(s: &ServerSignals) -> impl Iterator<Item = usize> {
    let n = s.window.series.t_s.len();
    (0..n).step_by(n.div_ceil(SERIES_POINTS).max(1))
}

fn column(s: &ServerSignals, col: Option<&Vec<Option<f64>>>) -> Vec<(f64, f64)> {
    let Some(col) = col else { return Vec::new() };
    let t = &s.window.series.t_s;
    drawn(s).filter_map(|i| Some((*t.get(i)?, (*col.get(i)?)?))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn signals(v: serde_json::Value) -> ServerSignals {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn reads_a_sparse_block_and_refuses_a_malformed_one() {
        let s = signals(json!({"urls": ["http://x/metrics"], "scrapes": 3, "window": {"gauges": {}}}));
        assert_eq!(s.urls, ["http://x/metrics"]);
        assert!(s.figures().is_empty());
        assert!(s.cross_check.is_none());
        let bad = json!({"window": {"gauges": {"running_requests": {"count": 1, "p50x": 3}}}});
        assert!(serde_json::from_value::<ServerSignals>(bad).is_err());
    }

    #[test]
    fn series_skip_gaps_and_table_keeps_every_scrape() {
        let s = signals(json!({"window": {"series": {
            "t_s": [1.0, 2.0, 3.0],
            "gauges": {"gpu_power_watts": [1.0, 2.0, 3.0], "waiting_requests": [0.0, null, 2.0], "running_requests": [4.0, 4.0]},
            "rates_per_s": {"generation_tokens": [null, 100.0, 120.0]}
        }}}));
        assert_eq!(s.gauge_series(GaugeSignal::WaitingRequests), [(1.0, 0.0), (3.0, 2.0)]);
        assert_eq!(s.gauge_series(GaugeSignal::RunningRequests), [(1.0, 4.0), (2.0, 4.0)], "a short column ends early");
        assert_eq!(s.rate_series(CounterSignal::GenerationTokens), [(2.0, 100.0), (3.0, 120.0)]);
        let (header, rows) = s.table();
        assert_eq!(
            header,
            ["t_s", "running_requests", "waiting_requests", "gpu_power_watts", "generation_tokens_per_s"]
        );
        assert_eq!(rows[1], [Some(2.0), Some(4.0), None, Some(2.0), Some(100.0)]);
        assert_eq!(rows[2][1], None);
    }

    #[test]
    fn long_series_are_thinned_for_charts() {
        let n = 2 * SERIES_POINTS + 10;
        let t: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let s = signals(json!({"window": {"series": {"t_s": t, "gauges": {"running_requests": t}}}}));
        let pts = s.gauge_series(GaugeSignal::RunningRequests);
        assert!(s.thinned() && pts.len() <= SERIES_POINTS && pts.len() > SERIES_POINTS / 2);
        assert_eq!(pts[1].0 - pts[0].0, 3.0);
        assert_eq!(s.table().1.len(), n);
    }
}
