//! The run page's server-signals and simulated-engine sections.

use super::{card, charts};
use crate::engine::{self, EngineView};
use crate::escape::html;
use crate::format;
use crate::server::{self, Figure, SignalsView};
use crate::svg::{Chart, Series, Style};
use goodput_core::prometheus::scrape::{CounterSignal, CrossCheck, GaugeSignal, HistogramSignal};
use goodput_core::RunResult;
use std::fmt::Write;

/// The server's own metrics during the run, beside the client's view.
pub(super) fn server_section(o: &mut String, r: &RunResult) {
    let Some(s) = server::of(r) else { return };
    o.push_str(r#"<section class="server"><h2>Server signals</h2>"#);
    let w = &s.window;
    let mut line = match &s.engine {
        Some(e) => format!("engine <b>{}</b>", html(e.name())),
        None => "no inference engine recognised".into(),
    };
    let others: Vec<String> = w.sources.iter().filter(|x| Some(**x) != s.engine).map(|x| html(x.name())).collect();
    if !others.is_empty() {
        let _ = write!(line, " (with {})", others.join(", "));
    }
    let urls: Vec<String> = s.urls.iter().map(|u| format!(r#"<span class="mono">{}</span>"#, html(u))).collect();
    let _ = write!(line, " · {} scrapes of {}", s.scrapes, if urls.is_empty() { "-".into() } else { urls.join(", ") });
    if s.interval_s > 0.0 {
        let _ = write!(line, " every {} s", s.interval_s);
    }
    let _ = write!(line, " · {} in the window over {:.2} s", w.scrapes, w.span_s);
    if s.failed_scrapes > 0 {
        let _ = write!(
            line,
            r#" · <span class="worse">{} failed</span>{}"#,
            s.failed_scrapes,
            s.last_error.as_deref().map(|e| format!(" (last error: {})", html(e))).unwrap_or_default()
        );
    }
    if s.parse_errors > 0 {
        let _ = write!(line, " · {} lines unreadable", s.parse_errors);
    }
    let _ = write!(o, r#"<p class="sub">{line}</p>"#);

    let figures = s.figures();
    if figures.is_empty() {
        o.push_str(if w.scrapes > 0 {
            r#"<p class="note">The endpoint answered, but none of its metrics is one goodput recognises (vLLM, SGLang, TGI, llama.cpp, Triton, DCGM).</p>"#
        } else {
            r#"<p class="note">No scrape succeeded inside the measurement window.</p>"#
        });
    } else {
        figure_cards(o, &figures);
    }

    let gauge = |g, label: &str, color| Series::new(label, Style::Line, color, s.gauge_series(g));
    let mut gpu = gauge(GaugeSignal::GpuUtilization, "GPU utilisation (mean over GPUs)", 3);
    gpu.dashed = true;
    let has_gpu = !gpu.points.is_empty();
    let mut drawn: Vec<Chart> = [
        series_chart(
            "server-requests-time",
            "Running and waiting requests (server)",
            "requests",
            false,
            vec![
                gauge(GaugeSignal::RunningRequests, "running", 0),
                gauge(GaugeSignal::WaitingRequests, "waiting (queued)", 1),
            ],
        ),
        series_chart(
            "server-kv-time",
            if has_gpu { "KV-cache and GPU use (server)" } else { "KV-cache use (server)" },
            "share of capacity",
            true,
            vec![gauge(GaugeSignal::KvCacheUsage, "KV-cache use", 2), gpu],
        ),
        series_chart(
            "server-generation-time",
            "Generation throughput (server)",
            "tokens/s",
            false,
            vec![Series::new("generation tokens/s", Style::Line, 4, s.rate_series(CounterSignal::GenerationTokens))],
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    for c in &mut drawn {
        let mut note = Vec::new();
        if c.id == "server-generation-time" {
            note.push("Each point is the counter's rate since the scrape before it.".to_string());
        }
        if s.thinned() {
            note.push(format!("Every n-th of {} scrapes shown; the CSV holds them all.", w.series.t_s.len()));
        }
        c.note = (!note.is_empty()).then(|| note.join(" "));
    }
    if !drawn.is_empty() {
        charts(o, &drawn);
    }
    if let Some(c) = &s.cross_check {
        let bucket = w.histograms.get(&HistogramSignal::Ttft).and_then(|h| h.p50_bucket);
        cross_check(o, c, bucket);
    }
    o.push_str("</section>");
}

/// The figures both sides count, side by side, and what the gaps mean.
/// `p50_bucket`: the bucket of the server's TTFT histogram its p50 lies
/// in, shown in place of a figure interpolated inside it.
fn cross_check(o: &mut String, c: &CrossCheck, p50_bucket: Option<[f64; 2]>) {
    let server_side =
        [c.server_ttft_mean_ms, c.server_ttft_p50_ms, c.server_generation_tokens, c.server_requests_succeeded];
    if server_side.iter().any(Option::is_some) {
        let diff = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:+.0}", a - b),
            _ => "-".into(),
        };
        o.push_str(r#"<h2 class="sub">Cross-check: client and server</h2><div class="scroll"><table class="crosscheck"><thead><tr><th></th><th>client</th><th>server</th><th>client − server</th></tr></thead><tbody>"#);
        // The gap is told on the row it was taken from; the mean's is exact,
        // the p50's only as fine as the server's buckets.
        let by_mean = c.ttft_gap_basis.as_deref() == Some("mean");
        let gap = |basis: bool| if basis { format::ms(c.ttft_gap_ms) } else { "-".into() };
        if c.server_ttft_mean_ms.is_some() {
            let _ = write!(
                o,
                "<tr><td>TTFT mean (ms)</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                format::ms(c.client_ttft_mean_ms),
                format::ms(c.server_ttft_mean_ms),
                gap(by_mean)
            );
        }
        let _ = write!(
            o,
            "<tr><td>TTFT p50 (ms)</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            format::ms(c.client_ttft_p50_ms),
            match p50_bucket {
                Some([lo, hi]) => format!("{}–{} (its bucket)", format::bound_ms(lo), format::bound_ms(hi)),
                None => format::ms(c.server_ttft_p50_ms),
            },
            gap(!by_mean)
        );
        let _ = write!(
            o,
            "<tr><td>output tokens (whole run)</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.client_output_tokens,
            count(c.server_generation_tokens),
            diff(Some(c.client_output_tokens as f64), c.server_generation_tokens)
        );
        let _ = write!(
            o,
            "<tr><td>requests completed (whole run)</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.client_completed,
            count(c.server_requests_succeeded),
            diff(Some(c.client_completed as f64), c.server_requests_succeeded)
        );
        if c.client_cached_prompt_share.is_some() || c.server_prefix_cache_hit_rate.is_some() {
            let pct = |v: Option<f64>| v.map(|v| format!("{:.1}%", v * 100.0)).unwrap_or("-".into());
            let points = match (c.client_cached_prompt_share, c.server_prefix_cache_hit_rate) {
                (Some(a), Some(b)) => format!("{:+.1} points", (a - b) * 100.0),
                _ => "-".into(),
            };
            let _ = write!(
                o,
                "<tr><td>prompt tokens from the prefix cache (whole run)</td><td>{}</td><td>{}</td><td>{points}</td></tr>",
                pct(c.client_cached_prompt_share),
                pct(c.server_prefix_cache_hit_rate),
            );
        }
        o.push_str("</tbody></table></div>");
    }
    if !c.notes.is_empty() {
        o.push_str(r#"<ul class="notes">"#);
        for n in &c.notes {
            let _ = write!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul>");
    }
}

/// The simulated engine's own view of an estimate.
pub(super) fn engine_section(o: &mut String, r: &RunResult) {
    let Some(e) = engine::of(r) else { return };
    o.push_str(r#"<section class="engine"><h2>Engine (simulated)</h2>"#);
    let line = e.config_line();
    if !line.is_empty() {
        let _ = write!(o, r#"<p class="sub">{}</p>"#, html(&line));
    }
    figure_cards(o, &e.figures());
    for n in &e.notes {
        let _ = write!(o, r#"<p class="note">Note: {}</p>"#, html(n));
    }
    let mut kv = series_chart(
        "engine-kv-time",
        "KV-cache use (simulated engine)",
        "share of KV capacity",
        true,
        vec![Series::new("KV-cache use", Style::Line, 2, e.kv_usage())],
    );
    if let Some(c) = kv.as_mut().filter(|_| e.kv_capacity_tokens > 0) {
        let rank = e.kv_rank_tokens.map(|t| format!(" ({t} a rank, the most one request holds)")).unwrap_or_default();
        c.note = Some(format!("Of a capacity of {} tokens{rank}.", e.kv_capacity_tokens));
    }
    let queue = series_chart(
        "engine-requests-time",
        "Running and waiting requests (simulated engine)",
        "requests",
        false,
        vec![
            Series::new("running", Style::Line, 0, e.running()),
            Series::new("waiting (queued)", Style::Line, 1, e.waiting()),
        ],
    );
    let cs: Vec<Chart> = [kv, queue].into_iter().flatten().collect();
    if !cs.is_empty() {
        charts(o, &cs);
        o.push_str(r#"<p class="note">Over the virtual time of the simulation.</p>"#);
    }
    o.push_str("</section>");
}

fn figure_cards(o: &mut String, figures: &[Figure]) {
    o.push_str(r#"<div class="cards">"#);
    for f in figures {
        let unit = if f.unit.is_empty() { String::new() } else { format!(" <small>{}</small>", html(f.unit)) };
        card(o, &html(f.label), &format!("{}{unit}", html(&f.value)), &html(&f.detail));
    }
    o.push_str("</div>");
}

/// Line with dots while the dots can be told apart, a plain line beyond.
fn line_style(points: usize) -> Style {
    if points <= 120 {
        Style::LineDots
    } else {
        Style::Line
    }
}

/// A time-series chart from the series that hold points; `None` when none does.
fn series_chart(id: &str, title: &str, y_label: &str, y_share: bool, series: Vec<Series>) -> Option<Chart> {
    let series: Vec<Series> = series
        .into_iter()
        .filter(|s| !s.points.is_empty())
        .map(|s| Series { style: line_style(s.points.len()), ..s })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(Chart {
        id: id.into(),
        title: title.into(),
        x_label: "time since start (s)".into(),
        y_label: y_label.into(),
        series,
        y_share,
        ..Default::default()
    })
}

fn count(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.0}"),
        _ => "-".into(),
    }
}
