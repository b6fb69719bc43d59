//! The HTML report: one self-contained file per run, sweep or comparison.
//! Charts are inline SVG drawn in Rust, styles and a small checking script
//! inline, the document embedded as JSON; a Content-Security-Policy forbids
//! every fetch, so the page works offline and leaks nothing when opened.

use super::{ExportError, Exporter, Rendered};
use crate::compare::{mark, Comparison, Verdict};
use crate::engine::{self, EngineView};
use crate::escape::{html, script_json};
use crate::format;
use crate::metric::{Better, Dist};
use crate::series::{self, Latency};
use crate::server::{self, Figure, SignalsView};
use crate::svg::{self, Chart, Guide, Mark, Series, Style};
use crate::terminal::load_line;
use goodput_core::ratings::{Band, Rated};
use goodput_core::scrape::{CounterSignal, CrossCheck, GaugeSignal, HistogramSignal};
use goodput_core::slo::SloMetric;
use goodput_core::sweep::{Load, PointRef, SweepResult};
use goodput_core::{RunResult, Slo};
use serde::Serialize;
use std::fmt::Write;

/// Above this size the embedded document leaves out per-request records: the
/// page must still open, and the charts already carry what they show.
pub const EMBED_LIMIT_BYTES: usize = 16 << 20;

/// Renders HTML reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Html;

impl Exporter for Html {
    fn name(&self) -> &'static str {
        "html"
    }

    fn render_run(&self, run: &RunResult) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(run_page(run)?.into_bytes()))
    }

    fn render_sweep(&self, sweep: &SweepResult) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(sweep_page(sweep)?.into_bytes()))
    }

    fn render_compare(&self, c: &Comparison, runs: &[&RunResult]) -> Result<Rendered, ExportError> {
        Ok(Rendered::File(compare_page(c, runs)?.into_bytes()))
    }
}

/// The full page around `body`; `data` is embedded for readers and scripts.
fn page(kind: &str, title: &str, body: &str, data: &str) -> String {
    let mut o = String::with_capacity(body.len() + data.len() + CSS.len() + JS.len() + 1024);
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\
         <meta name=\"generator\" content=\"goodput\">\
         <title>{}</title><style>{CSS}</style></head>\n<body data-report=\"{kind}\">\n{body}\n\
         <script type=\"application/json\" id=\"goodput-data\">{}</script>\n<script>{JS}</script>\n</body></html>\n",
        html(title),
        script_json(data),
    );
    o
}

/// The document as JSON for the page, without per-request records when it
/// would be too large, and a note saying so.
fn embed<T: Serialize>(doc: &T, strip: impl FnOnce(&mut serde_json::Value)) -> Result<(String, bool), ExportError> {
    embed_within(doc, EMBED_LIMIT_BYTES, strip)
}

fn embed_within<T: Serialize>(
    doc: &T,
    limit: usize,
    strip: impl FnOnce(&mut serde_json::Value),
) -> Result<(String, bool), ExportError> {
    // Measure before building: a long run's records can run to hundreds of MB.
    let mut size = ByteCount(0);
    serde_json::to_writer(&mut size, doc)?;
    if size.0 <= limit {
        return Ok((serde_json::to_string(doc)?, false));
    }
    let mut v = serde_json::to_value(doc)?;
    strip(&mut v);
    Ok((serde_json::to_string(&v)?, true))
}

struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn band_class(b: Band) -> &'static str {
    match b {
        Band::Excellent => "excellent",
        Band::Acceptable => "acceptable",
        Band::Marginal => "marginal",
        Band::Poor => "poor",
    }
}

fn rated_tag(r: &Option<Rated>) -> String {
    match r {
        Some(r) => format!(r#"<span class="tag {c}">{c}</span>"#, c = band_class(r.band)),
        None => String::new(),
    }
}

fn card(o: &mut String, key: &str, value: &str, sub: &str) {
    let _ = write!(
        o,
        r#"<div class="card"><div class="k">{key}</div><div class="v">{value}</div><div class="s">{sub}</div></div>"#
    );
}

fn slo_of(r: &RunResult) -> Option<Slo> {
    r.slo.as_ref().and_then(|s| s.spec.parse::<Slo>().ok())
}

fn slo_metric(m: Latency) -> Option<SloMetric> {
    match m {
        Latency::Ttft => Some(SloMetric::Ttft),
        Latency::Tpot => Some(SloMetric::Tpot),
        Latency::E2e => Some(SloMetric::E2e),
        Latency::Itl => None,
    }
}

/// Vertical guides for the SLO limits and objectives on one metric.
fn slo_guides(slo: &Option<Slo>, m: Latency) -> Vec<Guide> {
    let (Some(slo), Some(sm)) = (slo, slo_metric(m)) else { return Vec::new() };
    let mut g = Vec::new();
    for l in slo.limits.iter().filter(|l| l.metric == sm) {
        g.push(Guide { at: l.max.as_secs_f64() * 1e3, label: format!("limit {l}"), horizontal: false });
    }
    for ob in slo.objectives.iter().filter(|o| o.metric == sm) {
        g.push(Guide { at: ob.max.as_secs_f64() * 1e3, label: format!("objective {ob}"), horizontal: false });
    }
    g
}

fn header(o: &mut String, brand: &str, title: &str, lines: &[String]) {
    let _ = write!(o, r#"<header><div class="brand">goodput · {}</div><h1>{}</h1>"#, html(brand), html(title));
    for l in lines {
        let _ = write!(o, r#"<p class="meta">{l}</p>"#);
    }
}

fn target_line(r_target: &goodput_core::Target, extra: &str) -> String {
    let mut parts = vec![html(&r_target.url)];
    if r_target.embedded {
        parts.push("embedded simulator".into());
    }
    if let Some(s) = &r_target.server {
        parts.push(format!("server {}", html(s)));
    }
    parts.push(html(&r_target.api));
    if !extra.is_empty() {
        parts.push(html(extra));
    }
    format!("target {}", parts.join(" · "))
}

/// SLO verdict pills: the percentile objectives pass or fail, and the
/// per-request limits with their attainment.
fn verdicts(o: &mut String, r: &RunResult) {
    let Some(slo) = &r.slo else { return };
    o.push_str(r#"<div class="verdicts">"#);
    let _ = write!(
        o,
        r#"<span class="pill {c}">SLO {} · {}</span>"#,
        html(&slo.spec),
        if slo.pass { "objectives met" } else { "objective missed" },
        c = if slo.pass { "pass" } else { "fail" }
    );
    for ob in &slo.objectives {
        let _ = write!(
            o,
            r#"<span class="pill {c}">{} · measured {} ms · {w}</span>"#,
            html(&ob.objective),
            format::ms(ob.measured_ms),
            c = if ob.pass { "pass" } else { "fail" },
            w = if ob.pass { "pass" } else { "FAIL" }
        );
    }
    if let Some(g) = &r.summary.goodput {
        for l in &slo.limits {
            let _ = write!(
                o,
                r#"<span class="pill info">{} · {} of {} requests good ({})</span>"#,
                html(l),
                g.good_requests,
                g.judged_requests,
                format::value(Some(g.slo_attainment), crate::metric::Unit::Ratio)
            );
        }
    }
    o.push_str("</div>");
}

fn run_cards(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let q = &s.requests;
    let th = &s.throughput;
    let rt = &s.ratings;
    o.push_str(r#"<section class="cards">"#);
    let mut sub = format!("{} failed", q.failed);
    if q.cancelled > 0 {
        let _ = write!(sub, " · {} cancelled", q.cancelled);
    }
    if q.warmup > 0 {
        let _ = write!(sub, " · {} warm-up", q.warmup);
    }
    card(o, "requests completed", &format!("{} / {}", q.completed, q.sent), &sub);
    card(
        o,
        "output throughput",
        &format!("{:.1} <small>tok/s</small>", th.output_tokens_per_s),
        &format!(
            "peak {} · {:.3} req/s",
            crate::peers::peak_output_tokens_per_s(r).map_or("-".into(), |p| format!("{p:.1}")),
            th.requests_per_s
        ),
    );
    card(
        o,
        "TTFT p50",
        &format!("{} <small>ms</small> {}", format::ms(s.ttft_ms.p(50.0)), rated_tag(&rt.ttft_p50)),
        &format!("p95 {} ms {}", format::ms(s.ttft_ms.p(95.0)), rated_tag(&rt.ttft_p95)),
    );
    let reading = rt.times_reading_speed.map(|x| format!(" · {x:.1}× reading speed")).unwrap_or_default();
    card(
        o,
        "TPOT p50",
        &format!("{} <small>ms</small> {}", format::ms(s.tpot_ms.p(50.0)), rated_tag(&rt.tpot_p50)),
        &format!("p95 {} ms {}{reading}", format::ms(s.tpot_ms.p(95.0)), rated_tag(&rt.tpot_p95)),
    );
    card(
        o,
        "E2E p50",
        &format!("{} <small>ms</small>", format::ms(s.e2e_ms.p(50.0))),
        &format!(
            "p99 {} ms · {} from TTFT + TPOT×(n−1)",
            format::ms(s.e2e_ms.p(99.0)),
            format::change(rt.latency_model.relative_deviation)
        ),
    );
    if let Some(g) = &s.goodput {
        card(
            o,
            "goodput",
            &format!("{:.3} <small>req/s</small>", g.requests_per_s),
            &format!(
                "{:.1} tok/s · attainment {} · useful work {}",
                g.output_tokens_per_s,
                format::value(Some(g.slo_attainment), crate::metric::Unit::Ratio),
                format::value(Some(g.useful_work), crate::metric::Unit::Ratio)
            ),
        );
    }
    if let Some(c) = &r.cost {
        card(
            o,
            "cost per M output tokens",
            &c.usd_per_million_output_tokens.map(format::usd).unwrap_or("-".into()),
            &format!(
                "${:.2}/GPU-hour × {} · {} per M good tokens",
                c.gpu_hour_usd,
                c.gpus,
                c.usd_per_million_good_output_tokens.map(format::usd).unwrap_or("-".into())
            ),
        );
    }
    card(
        o,
        "in flight",
        &format!("{:.1}", s.in_flight.mean),
        &format!("peak {} · window {:.2} s", s.in_flight.peak, r.window.duration_s),
    );
    o.push_str("</section>");
}

fn latency_table(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let ps: Vec<f64> = s.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect();
    o.push_str(r#"<div class="scroll"><table class="latency"><thead><tr><th>latency (ms)</th><th>count</th><th>mean</th><th>std</th><th>min</th>"#);
    for p in &ps {
        let _ = write!(o, "<th>p{p}</th>");
    }
    o.push_str("<th>max</th></tr></thead><tbody>");
    // The read lag only where the client saw the kernel's receive times.
    let mut dists: Vec<Dist> =
        Dist::ALL[..10].iter().copied().filter(|d| *d != Dist::ClientReadLag || d.of(s).count > 0).collect();
    if s.requests.failed > 0 {
        dists.extend([Dist::ErrorAdjustedTtft, Dist::ErrorAdjustedE2e]);
    }
    for d in dists {
        let x = d.of(s);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
            html(d.label()),
            x.count,
            format::ms(x.mean),
            format::ms(x.std),
            format::ms(x.min)
        );
        for p in &ps {
            let _ = write!(o, "<td>{}</td>", format::ms(x.p(*p)));
        }
        let _ = write!(o, "<td>{}</td></tr>", format::ms(x.max));
    }
    o.push_str("</tbody></table></div>");
}

fn cdf_chart(id: &str, m: Latency, runs: &[(String, &RunResult)], guides: Vec<Guide>) -> Chart {
    let mut series = Vec::new();
    let mut approx = false;
    for (i, (label, r)) in runs.iter().enumerate() {
        let cdf = series::cdf(r, m);
        approx |= cdf.from_percentiles;
        let style = if cdf.from_percentiles { Style::LineDots } else { Style::Line };
        let name = if runs.len() == 1 {
            format!("{} ({} samples)", m.id().to_uppercase(), cdf.samples)
        } else {
            label.clone()
        };
        series.push(Series::new(name, style, i, cdf.points));
    }
    let note = approx.then(|| {
        "Drawn from the summary's percentiles (min, pNN, max): the run was saved without per-request records \
         (--include-requests)."
            .to_string()
    });
    Chart {
        id: id.into(),
        title: format!("{} ({}), CDF", m.title(), m.id().to_uppercase()),
        x_label: format!("{} (ms)", m.id().to_uppercase()),
        y_label: "share of samples ≤ x".into(),
        series,
        guides,
        y_share: true,
        note,
        ..Default::default()
    }
}

fn time_charts(r: &RunResult) -> Vec<Chart> {
    let Some(ts) = series::time_series(r) else { return Vec::new() };
    let w = ts.bucket_s;
    let bands = if r.summary.requests.warmup > 0 && ts.window.0 > 0.0 {
        vec![(0.0, ts.window.0, "warm-up".to_string())]
    } else {
        Vec::new()
    };
    let bucket = if w >= 1.0 { format!("{w} s") } else { format!("{} ms", w * 1e3) };
    let mut ttft = vec![Series::new("TTFT of a request, by send time", Style::Dots, 0, ts.ttft.clone())];
    if !ts.failures.is_empty() {
        ttft.push(Series::new(
            "failed request (sent at)",
            Style::Dots,
            1,
            ts.failures.iter().map(|&t| (t, 0.0)).collect(),
        ));
    }
    let mut charts = vec![
        Chart {
            id: "throughput-time".into(),
            title: "Output throughput over the run".into(),
            x_label: "time since start (s)".into(),
            y_label: "output tokens/s".into(),
            series: vec![Series::new(
                format!("output tok/s per {bucket} bucket"),
                Style::Bars { width: w },
                0,
                ts.output_tokens_per_s.clone(),
            )],
            bands: bands.clone(),
            note: Some(format!(
                "Tokens of successful requests by the arrival time of their chunks, in {bucket} buckets."
            )),
            ..Default::default()
        },
        Chart {
            id: "inflight-time".into(),
            title: "Requests in flight over the run".into(),
            x_label: "time since start (s)".into(),
            y_label: "requests in flight".into(),
            series: vec![Series::new(
                format!("mean in flight per {bucket} bucket"),
                Style::Line,
                2,
                svg::steps(&ts.in_flight, w),
            )],
            bands: bands.clone(),
            ..Default::default()
        },
        Chart {
            id: "ttft-time".into(),
            title: "TTFT over the run".into(),
            x_label: "send time (s)".into(),
            y_label: "TTFT (ms)".into(),
            series: ttft,
            bands,
            guides: slo_guides(&slo_of(r), Latency::Ttft)
                .into_iter()
                .map(|g| Guide { horizontal: true, ..g })
                .collect(),
            note: (ts.ttft.len() >= series::SCATTER_POINTS)
                .then(|| format!("Every n-th request shown ({} dots).", ts.ttft.len())),
            ..Default::default()
        },
    ];
    // An imported run whose file does not time each chunk cannot place its
    // tokens in time.
    if crate::peers::peak_output_tokens_per_s(r).is_none() {
        charts.remove(0);
    }
    charts
}

fn charts(o: &mut String, charts: &[Chart]) {
    o.push_str(r#"<div class="charts">"#);
    for c in charts {
        o.push_str(&c.render());
    }
    o.push_str("</div>");
}

fn run_body(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    let th = &s.throughput;
    o.push_str(r#"<section><h2>Latency</h2>"#);
    latency_table(o, r);
    let slo = slo_of(r);
    let one = [(String::new(), r)];
    let cdfs: Vec<Chart> = Latency::ALL
        .iter()
        .filter(|m| crate::peers::recomputed(r, m.field()))
        .map(|&m| cdf_chart(&format!("{}-cdf", m.id()), m, &one, slo_guides(&slo, m)))
        .collect();
    charts(o, &cdfs);
    o.push_str("</section>");

    let tc = time_charts(r);
    o.push_str(r#"<section><h2>Over the run</h2>"#);
    if tc.is_empty() {
        o.push_str(r#"<p class="note">No time series: the run was saved without per-request records (--include-requests).</p>"#);
    } else {
        charts(o, &tc);
    }
    o.push_str("</section>");
    server_section(o, r);
    engine_section(o, r);

    o.push_str(r#"<section><h2>Throughput, tokens and cost</h2><div class="scroll"><table class="kv"><tbody>"#);
    let tok = &s.tokens;
    let sources: Vec<String> = tok.output_sources.iter().map(|(k, n)| format!("{} {n}", html(k))).collect();
    let mut rows: Vec<(&str, String)> = vec![
        ("requests/s", format!("{:.3}", th.requests_per_s)),
        (
            "output tokens/s",
            format!(
                "{:.1} (peak {} over 1 s)",
                th.output_tokens_per_s,
                crate::peers::peak_output_tokens_per_s(r).map_or("-".into(), |p| format!("{p:.1}"))
            ),
        ),
        ("input tokens/s", format!("{:.1}", th.input_tokens_per_s)),
        ("total tokens/s", format!("{:.1}", th.total_tokens_per_s)),
        ("in flight", format!("{:.2} mean · {} peak", s.in_flight.mean, s.in_flight.peak)),
        (
            "tokens",
            format!("{} in · {} out ({} including failed and cancelled)", tok.input, tok.output, tok.output_all),
        ),
        ("output counted by", if sources.is_empty() { "-".into() } else { sources.join(", ") }),
    ];
    if tok.chunk_sources.keys().any(|k| k != "continuous_usage") {
        let per_chunk: Vec<String> = tok.chunk_sources.iter().map(|(k, n)| format!("{} {n}", html(k))).collect();
        rows.push(("tokens per chunk from", per_chunk.join(", ")));
    }
    if let Some(extra) = tok.prompt_extra.as_ref().and_then(format::prompt_extra) {
        rows.push(("prompt extra", html(&extra)));
    }
    if let Some(c) = &r.client {
        rows.push(("client CPU", html(&format::client_cost(c))));
    }
    for (k, v) in rows {
        let _ = write!(o, "<tr><td>{k}</td><td class=\"text\">{v}</td></tr>");
    }
    if let Some(c) = &r.cost {
        let usd = |v: Option<f64>| v.map(format::usd).unwrap_or("-".into());
        let _ = write!(
            o,
            "<tr><td>cost</td><td class=\"text\">${:.2}/GPU-hour × {} = ${:.2}/hour · {} per M output tokens · {} per M total · {} per request{} · {} per M good output tokens</td></tr>",
            c.gpu_hour_usd,
            c.gpus,
            c.usd_per_hour,
            usd(c.usd_per_million_output_tokens),
            usd(c.usd_per_million_total_tokens),
            usd(c.usd_per_request),
            c.usd_per_session.map(|v| format!(" · {} per session", usd(Some(v)))).unwrap_or_default(),
            usd(c.usd_per_million_good_output_tokens)
        );
    }
    o.push_str("</tbody></table></div></section>");

    sessions(o, r);
    by_model(o, r);
    failures(o, r);
    if let Some(slo) = &r.slo {
        o.push_str(r#"<section><h2>SLO</h2><div class="scroll"><table><thead><tr><th>objective</th><th>limit (ms)</th><th>measured (ms)</th><th>verdict</th></tr></thead><tbody>"#);
        for ob in &slo.objectives {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="{c}">{w}</td></tr>"#,
                html(&ob.objective),
                format::ms(Some(ob.limit_ms)),
                format::ms(ob.measured_ms),
                c = if ob.pass { "better" } else { "worse" },
                w = if ob.pass { "pass" } else { "FAIL" }
            );
        }
        if let Some(g) = &s.goodput {
            for l in &slo.limits {
                let _ = write!(
                    o,
                    r#"<tr><td>{}</td><td colspan="3" class="text">per request: {} of {} good · goodput {:.3} req/s, {:.1} tok/s · useful work {}</td></tr>"#,
                    html(l),
                    g.good_requests,
                    g.judged_requests,
                    g.requests_per_s,
                    g.output_tokens_per_s,
                    format::value(Some(g.useful_work), crate::metric::Unit::Ratio)
                );
            }
        }
        o.push_str("</tbody></table></div></section>");
    }
    if !r.warnings.is_empty() {
        o.push_str(r#"<section><h2>Warnings</h2><ul class="warnings">"#);
        for w in &r.warnings {
            let _ = write!(o, "<li>{}</li>", html(w));
        }
        o.push_str("</ul></section>");
    }
    let v = &r.compat.vllm;
    let _ = write!(
        o,
        r#"<section><h2>vLLM view</h2><p class="note">The same run under the names and formulas of vLLM's <code>bench serve</code>.</p><div class="scroll"><table><thead><tr><th>metric (ms)</th><th>mean</th><th>median</th><th>std</th><th>p99</th></tr></thead><tbody>"#
    );
    for (name, vals) in [
        ("TTFT", [v.mean_ttft_ms, v.median_ttft_ms, v.std_ttft_ms, v.p99_ttft_ms]),
        ("TPOT", [v.mean_tpot_ms, v.median_tpot_ms, v.std_tpot_ms, v.p99_tpot_ms]),
        ("ITL", [v.mean_itl_ms, v.median_itl_ms, v.std_itl_ms, v.p99_itl_ms]),
        ("E2EL", [v.mean_e2el_ms, v.median_e2el_ms, v.std_e2el_ms, v.p99_e2el_ms]),
    ] {
        let _ = write!(o, "<tr><td>{name}</td>");
        for x in vals {
            let _ = write!(o, "<td>{}</td>", format::ms(x));
        }
        o.push_str("</tr>");
    }
    let _ = write!(
        o,
        "</tbody></table></div><p class=\"note\">{} completed · {:.3} req/s · {:.1} output tok/s · {:.1} total tok/s</p></section>",
        v.completed, v.request_throughput, v.output_throughput, v.total_token_throughput
    );
}

/// What the numbers suggest, right under the verdicts: the first thing to
/// read after whether the SLO held.
fn diagnosis(o: &mut String, r: &RunResult) {
    if r.diagnosis.is_empty() {
        return;
    }
    o.push_str(r#"<section class="diagnosis"><h2>Diagnosis</h2><ul>"#);
    // Each message names its kind in its own first words.
    for d in &r.diagnosis {
        let _ = write!(o, "<li>{}</li>", html(&d.message));
    }
    o.push_str("</ul></section>");
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

/// The server's own metrics during the run, beside the client's view.
fn server_section(o: &mut String, r: &RunResult) {
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
fn engine_section(o: &mut String, r: &RunResult) {
    let Some(e) = engine::of(r) else { return };
    o.push_str(r#"<section class="engine"><h2>Engine (simulated)</h2>"#);
    let line = e.config_line();
    if !line.is_empty() {
        let _ = write!(o, r#"<p class="sub">{}</p>"#, html(&line));
    }
    figure_cards(o, &e.figures());
    let mut kv = series_chart(
        "engine-kv-time",
        "KV-cache use (simulated engine)",
        "share of KV capacity",
        true,
        vec![Series::new("KV-cache use", Style::Line, 2, e.kv_usage())],
    );
    if let Some(c) = kv.as_mut().filter(|_| e.kv_capacity_tokens > 0) {
        c.note = Some(format!("Of a capacity of {} tokens.", e.kv_capacity_tokens));
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

/// Multi-turn sessions: what finished, what one took, and each turn as
/// its conversation grew.
fn sessions(o: &mut String, r: &RunResult) {
    let Some(ss) = &r.summary.sessions else { return };
    let secs = format::seconds_of_ms;
    let _ = write!(
        o,
        r#"<section><h2>Sessions</h2><p>{} started · {} completed · {} failed · {} cut short · {:.3} completed per second · {} turns on average · {} p50 and {} max from a session's first question to its last answer</p>"#,
        ss.started,
        ss.completed,
        ss.failed,
        ss.cut,
        ss.per_s,
        ss.turns.mean.map(|m| format!("{m:.1}")).unwrap_or("-".into()),
        secs(ss.duration_ms.p(50.0)),
        secs(ss.duration_ms.max),
    );
    let cached = ss.by_turn.iter().any(|t| t.cached_tokens_mean.is_some());
    o.push_str(r#"<div class="scroll"><table><thead><tr><th>turn</th><th>requests</th><th>input tokens (mean)</th>"#);
    if cached {
        o.push_str("<th>served from prefix cache (mean)</th>");
    }
    o.push_str("<th>TTFT p50 (ms)</th><th>TTFT max (ms)</th></tr></thead><tbody>");
    for t in &ss.by_turn {
        let _ = write!(o, "<tr><td>{}</td><td>{}</td><td>{:.0}</td>", t.turn, t.requests, t.input_tokens_mean);
        if cached {
            let _ = write!(o, "<td>{}</td>", t.cached_tokens_mean.map(|c| format!("{c:.0}")).unwrap_or("-".into()));
        }
        let _ = write!(o, "<td>{}</td><td>{}</td></tr>", format::ms(t.ttft_ms.p(50.0)), format::ms(t.ttft_ms.max));
    }
    o.push_str("</tbody></table></div>");
    charts(o, &session_charts(ss));
    o.push_str("</section>");
}

/// A run spread over several models: a row per model.
fn by_model(o: &mut String, r: &RunResult) {
    let rows = &r.summary.by_model;
    if rows.is_empty() {
        return;
    }
    let ps: Vec<f64> = r.summary.ttft_ms.percentiles.iter().map(|(p, _)| *p).collect();
    let (header, cells) = format::by_model_table(rows, &ps);
    o.push_str(r#"<section><h2>By model</h2><div class="scroll"><table><thead><tr>"#);
    for h in &header {
        let _ = write!(o, "<th>{}</th>", html(h));
    }
    o.push_str("</tr></thead><tbody>");
    for row in &cells {
        o.push_str("<tr>");
        for c in row {
            let _ = write!(o, "<td>{}</td>", html(c));
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div></section>");
}

/// TTFT and the prompt, turn by turn: what a growing conversation costs,
/// and how much of it the prefix cache served.
fn session_charts(ss: &goodput_core::session::SessionSummary) -> Vec<Chart> {
    let by = |f: &dyn Fn(&goodput_core::session::TurnStats) -> Option<f64>| -> Vec<(f64, f64)> {
        ss.by_turn.iter().filter_map(|t| Some((t.turn as f64, f(t)?))).collect()
    };
    let mut ttft = vec![Series::new("TTFT p50", Style::LineDots, 0, by(&|t| t.ttft_ms.p(50.0)))];
    let tail = ss.by_turn.first().and_then(|t| t.ttft_ms.percentiles.last()).map(|(p, _)| *p).filter(|p| *p > 50.0);
    if let Some(p) = tail {
        ttft.push(Series::new(format!("TTFT p{p}"), Style::LineDots, 1, by(&|t| t.ttft_ms.p(p))));
    }
    let mut prompt = vec![Series::new("input tokens (mean)", Style::LineDots, 2, by(&|t| Some(t.input_tokens_mean)))];
    let cached = by(&|t| t.cached_tokens_mean);
    if !cached.is_empty() {
        prompt.push(Series::new("served from the prefix cache (mean)", Style::LineDots, 3, cached));
    }
    vec![
        Chart {
            id: "session-ttft".into(),
            title: "TTFT by turn".into(),
            x_label: "turn of the session".into(),
            y_label: "TTFT (ms)".into(),
            series: ttft,
            ..Default::default()
        },
        Chart {
            id: "session-prompt".into(),
            title: "The prompt by turn".into(),
            x_label: "turn of the session".into(),
            y_label: "tokens".into(),
            series: prompt,
            note: Some("Each turn's prompt holds the conversation before it.".into()),
            ..Default::default()
        },
    ]
}

fn failures(o: &mut String, r: &RunResult) {
    let q = &r.summary.requests;
    o.push_str(r#"<section><h2>Failures</h2>"#);
    if q.errors_by_kind.is_empty() {
        o.push_str(r#"<p class="note">No request failed.</p></section>"#);
        return;
    }
    o.push_str(r#"<div class="scroll"><table><thead><tr><th>kind</th><th>requests</th></tr></thead><tbody>"#);
    for (k, n) in &q.errors_by_kind {
        let _ = write!(o, "<tr><td>{}</td><td>{n}</td></tr>", html(k));
    }
    o.push_str("</tbody></table></div>");
    let msgs = series::failure_messages(r, 20);
    if !msgs.is_empty() {
        o.push_str(r#"<div class="scroll"><table class="messages"><thead><tr><th>kind</th><th>count</th><th>message</th></tr></thead><tbody>"#);
        for (k, m, n) in msgs {
            let _ = write!(o, r#"<tr><td>{}</td><td>{n}</td><td class="text mono">{}</td></tr>"#, html(&k), html(&m));
        }
        o.push_str("</tbody></table></div>");
    }
    o.push_str("</section>");
}

fn config_section(o: &mut String, config: &serde_json::Value, stripped: bool) -> Result<(), ExportError> {
    let _ = write!(
        o,
        r#"<section><h2>Configuration</h2><pre class="config">{}</pre>{}</section>"#,
        html(&serde_json::to_string_pretty(config)?),
        if stripped {
            format!(
                r#"<p class="note">The embedded document leaves out per-request records (over {} MiB); the JSON result holds them.</p>"#,
                EMBED_LIMIT_BYTES >> 20
            )
        } else {
            String::new()
        }
    );
    Ok(())
}

fn footer(o: &mut String, tool: &goodput_core::Tool, schema: &str) {
    let _ = write!(
        o,
        r#"<footer>{} {} · schema {} · self-contained report: no network access; the result document is embedded (script#goodput-data).</footer>"#,
        html(&tool.name),
        html(&tool.version),
        html(schema)
    );
}

fn strip_requests(v: &mut serde_json::Value) {
    v.as_object_mut().map(|m| m.remove("requests"));
}

/// One run as a page.
pub fn run_page(r: &RunResult) -> Result<String, ExportError> {
    let (data, stripped) = embed(r, strip_requests)?;
    let mut o = String::new();
    let load = load_line(&r.config);
    let mut lines = vec![target_line(&r.target, "")];
    if let Some(i) = crate::peers::import_info(r) {
        lines.push(format!(
            "imported from {} {} · {} ({})",
            html(&i.tool),
            html(&crate::peers::version_text(&i.version)),
            html(&i.source),
            html(&i.format)
        ));
    }
    if !load.is_empty() {
        lines.push(format!("load {}", html(&load)));
    }
    lines.push(format!(
        "{} started {} · window {:.2} s ({:.2} → {:.2} s){}",
        html(&r.kind),
        format::utc(r.started_unix_s),
        r.window.duration_s,
        r.window.start_s,
        r.window.end_s,
        if r.interrupted { r#" · <span class="tag poor">interrupted: partial result</span>"# } else { "" }
    ));
    let title = match r.config.label.as_deref() {
        Some(l) => format!("{l} · {}", r.target.model),
        None => r.target.model.clone(),
    };
    header(&mut o, &format!("{} report", r.kind), &title, &lines);
    verdicts(&mut o, r);
    o.push_str("</header><main>");
    diagnosis(&mut o, r);
    run_cards(&mut o, r);
    run_body(&mut o, r);
    config_section(&mut o, &serde_json::to_value(&r.config)?, stripped)?;
    o.push_str("</main>");
    footer(&mut o, &r.tool, &r.schema);
    Ok(page("run", &format!("goodput {} · {}", r.kind, r.target.model), &o, &data))
}

fn load_axis(points: &[goodput_core::sweep::SweepPoint]) -> &'static str {
    match points.first().map(|p| p.load) {
        Some(Load::Rate(_)) => "request rate (req/s)",
        _ => "concurrency (requests in flight)",
    }
}

fn point_mark(
    p: &Option<PointRef>,
    y: impl Fn(&PointRef) -> Option<f64>,
    label: &str,
    class: &'static str,
) -> Option<Mark> {
    let p = p.as_ref()?;
    Some(Mark { x: p.output_tokens_per_s, y: y(p)?, label: format!("{label}: {}", p.load.label()), class })
}

/// A sweep as a page.
pub fn sweep_page(sw: &SweepResult) -> Result<String, ExportError> {
    let (data, stripped) = embed(sw, |v| {
        if let Some(points) = v.get_mut("points").and_then(|p| p.as_array_mut()) {
            for p in points {
                p.get_mut("result").and_then(|r| r.as_object_mut()).map(|m| m.remove("requests"));
            }
        }
    })?;
    let a = &sw.analysis;
    let mut o = String::new();
    let loads: Vec<String> = sw.points.iter().map(|p| p.load.label()).collect();
    let mut lines = vec![target_line(&sw.target, "")];
    lines.push(format!("{} points: {}", sw.points.len(), html(&loads.join(", "))));
    lines.push(format!(
        "{} started {}{}",
        html(&sw.kind),
        format::utc(sw.started_unix_s),
        if sw.interrupted { r#" · <span class="tag poor">interrupted: partial result</span>"# } else { "" }
    ));
    if let Some(spec) = sw.points.iter().find_map(|p| p.result.slo.as_ref().map(|s| s.spec.clone())) {
        lines.push(format!("SLO {}", html(&spec)));
    }
    header(&mut o, "sweep report", &sw.target.model, &lines);
    if let Some(rec) = &a.recommendation {
        let _ = write!(o, r#"<div class="verdicts"><span class="pill pass">recommended · {}</span></div>"#, html(rec));
    }
    o.push_str("</header><main><section class=\"cards\">");
    let point_card = |o: &mut String, key: &str, p: &Option<PointRef>, what: &str| match p {
        Some(p) => card(
            o,
            key,
            &html(&p.load.label()),
            &format!(
                "{:.1} tok/s · TTFT p50 {} ms{}{}",
                p.output_tokens_per_s,
                format::ms(p.ttft_p50_ms),
                p.goodput_tokens_per_s.map(|g| format!(" · goodput {g:.1} tok/s")).unwrap_or_default(),
                p.usd_per_million_output_tokens.map(|c| format!(" · {} per M", format::usd(c))).unwrap_or_default()
            ),
        ),
        None => card(o, key, "-", what),
    };
    point_card(&mut o, "recommended", &a.recommended, "no recommendation");
    point_card(&mut o, "saturation", &a.saturation, "not reached");
    point_card(&mut o, "max throughput", &a.max_throughput, "-");
    point_card(&mut o, "max goodput", &a.max_goodput, "no SLO given");
    point_card(&mut o, "highest load meeting the SLO", &a.highest_load_meeting_slo, "none (or no SLO given)");
    o.push_str("</section>");
    if !a.notes.is_empty() {
        o.push_str(r#"<section><ul class="warnings">"#);
        for n in &a.notes {
            let _ = write!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul></section>");
    }

    let pts = &sw.points;
    // Lines join the points from the lightest load to the heaviest, not in
    // the order they ran (a search adds points between those of the grid).
    // Requests in flight order loads of either kind: more load, more in
    // flight, for a closed loop and an open one alike.
    let mut ordered: Vec<&goodput_core::sweep::SweepPoint> = pts.iter().collect();
    ordered.sort_by(|a, b| a.result.summary.in_flight.mean.total_cmp(&b.result.summary.in_flight.mean));
    let tips = |f: &dyn Fn(&RunResult) -> Option<f64>, what: &str| -> Vec<String> {
        ordered
            .iter()
            .filter(|p| f(&p.result).is_some())
            .map(|p| {
                format!(
                    "{}: {:.1} tok/s, {what} {} ms",
                    p.load.label(),
                    p.result.summary.throughput.output_tokens_per_s,
                    format::ms(f(&p.result))
                )
            })
            .collect()
    };
    let curve = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<(f64, f64)> {
        ordered.iter().filter_map(|p| Some((p.result.summary.throughput.output_tokens_per_s, f(&p.result)?))).collect()
    };
    let latency_curve = |id: &str, name: &str, d: Dist, ref_y: &dyn Fn(&PointRef) -> Option<f64>| {
        let p50 = |r: &RunResult| d.of(&r.summary).p(50.0);
        let p99 = |r: &RunResult| d.of(&r.summary).p(99.0);
        let mut s50 = Series::new(format!("{name} p50"), Style::LineDots, 0, curve(&p50));
        s50.tips = tips(&p50, &format!("{name} p50"));
        let mut s99 = Series::new(format!("{name} p99"), Style::LineDots, 1, curve(&p99));
        s99.tips = tips(&p99, &format!("{name} p99"));
        s99.dashed = true;
        Chart {
            id: id.into(),
            title: format!("Throughput vs {name}"),
            x_label: "output tokens/s".into(),
            y_label: format!("{name} (ms)"),
            series: vec![s50, s99],
            marks: [
                point_mark(&a.saturation, ref_y, "saturation", "mark-sat"),
                point_mark(&a.recommended, ref_y, "recommended", "mark-rec"),
            ]
            .into_iter()
            .flatten()
            .collect(),
            note: Some(
                "One dot per load, in load order; the knee is where latency climbs while throughput stops growing."
                    .into(),
            ),
            ..Default::default()
        }
    };
    let p50_at = |d: Dist| move |p: &PointRef| sw.points.get(p.index).and_then(|x| d.of(&x.result.summary).p(50.0));
    let ttft_curve = latency_curve("sweep-ttft", "TTFT", Dist::Ttft, &p50_at(Dist::Ttft));
    let e2e_curve = latency_curve("sweep-e2e", "E2E", Dist::E2e, &p50_at(Dist::E2e));

    let by_load = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<(f64, f64)> {
        ordered.iter().filter_map(|p| Some((p.load.value(), f(&p.result)?))).collect()
    };
    let mut load_series = vec![Series::new(
        "output tok/s",
        Style::LineDots,
        0,
        by_load(&|r| Some(r.summary.throughput.output_tokens_per_s)),
    )];
    let goodput = by_load(&|r| r.summary.goodput.as_ref().map(|g| g.output_tokens_per_s));
    if !goodput.is_empty() {
        load_series.push(Series::new("goodput tok/s (requests meeting the SLO)", Style::LineDots, 2, goodput));
    }
    let load_mark = |p: &Option<PointRef>, label: &str, class: &'static str| {
        p.as_ref().map(|p| Mark {
            x: p.load.value(),
            y: p.goodput_tokens_per_s.unwrap_or(p.output_tokens_per_s),
            label: format!("{label}: {}", p.load.label()),
            class,
        })
    };
    let goodput_chart = Chart {
        id: "sweep-goodput".into(),
        title: "Throughput and goodput by load".into(),
        x_label: load_axis(pts).into(),
        y_label: "tokens/s".into(),
        series: load_series,
        marks: [
            load_mark(&a.saturation, "saturation", "mark-sat"),
            load_mark(&a.recommended, "recommended", "mark-rec"),
        ]
        .into_iter()
        .flatten()
        .collect(),
        ..Default::default()
    };
    // At most six overlaid distributions stay readable: spread them over the loads.
    let shown: Vec<usize> = if pts.len() <= 6 {
        (0..pts.len()).collect()
    } else {
        let mut v: Vec<usize> = (0..6).map(|k| (k * (pts.len() - 1) + 2) / 5).collect();
        v.dedup();
        v
    };
    let overlay: Vec<(String, &RunResult)> =
        shown.iter().map(|&i| (ordered[i].load.label(), &ordered[i].result)).collect();
    let mut ttft_cdf = cdf_chart("sweep-ttft-cdf", Latency::Ttft, &overlay, Vec::new());
    ttft_cdf.title = "TTFT distribution by load".into();
    if shown.len() < pts.len() {
        ttft_cdf.note = Some(format!("{} of {} loads shown.", shown.len(), pts.len()));
    }
    o.push_str(r#"<section><h2>Throughput and latency</h2>"#);
    charts(&mut o, &[ttft_curve, e2e_curve, goodput_chart, ttft_cdf]);
    o.push_str("</section>");

    o.push_str(r#"<section><h2>Points</h2><div class="scroll"><table class="points"><thead><tr><th>load</th><th>origin</th><th>req/s</th><th>output tok/s</th><th>TTFT p50</th><th>TTFT p99</th><th>TPOT p50</th><th>E2E p99</th><th>failed</th><th>goodput tok/s</th><th>attainment</th><th>SLO</th><th>$ per M</th></tr></thead><tbody>"#);
    for (i, p) in pts.iter().enumerate() {
        let r = &p.result;
        let s = &r.summary;
        let role = [(&a.recommended, "recommended"), (&a.saturation, "saturation")]
            .iter()
            .filter(|(x, _)| x.as_ref().is_some_and(|x| x.index == i))
            .map(|(_, l)| format!(r#" <span class="tag info">{l}</span>"#))
            .collect::<String>();
        let slo = match goodput_core::sweep::meets_slo(r, goodput_core::sweep::DEFAULT_ATTAINMENT_TARGET) {
            Some(true) => r#"<span class="better">met</span>"#,
            Some(false) => r#"<span class="worse">missed</span>"#,
            None => "-",
        };
        let _ = write!(
            o,
            "<tr><td>{}{role}</td><td>{}</td><td>{:.3}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{slo}</td><td>{}</td></tr>",
            html(&p.load.label()),
            html(&p.origin),
            s.throughput.requests_per_s,
            s.throughput.output_tokens_per_s,
            format::ms(s.ttft_ms.p(50.0)),
            format::ms(s.ttft_ms.p(99.0)),
            format::ms(s.tpot_ms.p(50.0)),
            format::ms(s.e2e_ms.p(99.0)),
            s.requests.failed,
            s.goodput.as_ref().map(|g| format!("{:.1}", g.output_tokens_per_s)).unwrap_or("-".into()),
            s.goodput.as_ref().map(|g| format::value(Some(g.slo_attainment), crate::metric::Unit::Ratio)).unwrap_or("-".into()),
            r.cost.as_ref().and_then(|c| c.usd_per_million_output_tokens).map(format::usd).unwrap_or("-".into()),
        );
    }
    o.push_str("</tbody></table></div></section>");
    config_section(&mut o, &serde_json::to_value(&sw.config)?, stripped)?;
    o.push_str("</main>");
    footer(&mut o, &sw.tool, &sw.schema);
    Ok(page("sweep", &format!("goodput sweep · {}", sw.target.model), &o, &data))
}

/// A comparison as a page, with the runs' distributions overlaid.
pub fn compare_page(c: &Comparison, runs: &[&RunResult]) -> Result<String, ExportError> {
    let data = serde_json::to_string(c)?;
    let mut o = String::new();
    let lines: Vec<String> = c
        .labels
        .iter()
        .zip(runs)
        .enumerate()
        .map(|(i, (l, r))| {
            format!(
                r#"<i class="sw c{}"></i>{} <b>{}</b> · {} · {} · {} started {}"#,
                i % 6,
                if i == 0 { "baseline" } else { "run" },
                html(l),
                html(&r.target.model),
                html(&r.target.url),
                html(&r.kind),
                format::utc(r.started_unix_s)
            )
        })
        .collect();
    let mut lines = lines;
    if let Some(n) = &c.note {
        lines.push(format!("note: {}", html(n)));
    }
    header(&mut o, "comparison", &format!("{} runs compared", c.labels.len()), &lines);
    if !c.verdicts.is_empty() {
        o.push_str(r#"<div class="verdicts">"#);
        for v in &c.verdicts {
            let (cls, word) = match v.verdict {
                Verdict::Pass => ("pass", "pass"),
                Verdict::Fail => ("fail", "FAIL"),
                Verdict::Unjudged => ("fail", "UNJUDGED"),
            };
            let _ = write!(
                o,
                r#"<span class="pill {cls}">{} on {} · {} · {word}</span>"#,
                html(&v.rule),
                html(c.labels.get(v.run).map(String::as_str).unwrap_or("?")),
                html(&v.reason)
            );
        }
        o.push_str("</div>");
    }
    o.push_str(r#"</header><main><section><h2>Metrics</h2><div class="scroll"><table class="compare"><thead><tr><th>metric</th>"#);
    for (i, l) in c.labels.iter().enumerate() {
        let _ = write!(o, "<th>{}</th>", html(l));
        if i > 0 {
            o.push_str("<th>change</th>");
        }
    }
    o.push_str("</tr></thead><tbody>");
    for row in &c.rows {
        let _ = write!(o, "<tr><td>{}</td>", html(&row.label));
        for (i, v) in row.values.iter().enumerate() {
            let _ = write!(o, "<td>{}</td>", format::value(*v, row.unit));
            if i > 0 {
                let ch = row.changes[i];
                let cls = match mark(row.better, ch) {
                    " +" => "better",
                    " !" => "worse",
                    _ => "",
                };
                let _ = write!(o, r#"<td class="{cls}">{}</td>"#, format::change(ch));
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    let _ = write!(
        o,
        r#"<p class="note">Change is relative to the baseline; <span class="better">green</span> is better, <span class="worse">red</span> worse{}.</p></section>"#,
        if c.rows.iter().any(|r| r.better == Better::Neither) { " (uncoloured: neither way is better)" } else { "" }
    );
    if !c.differences.is_empty() {
        o.push_str(r#"<section><h2>Settings that differ</h2><div class="scroll"><table class="compare"><thead><tr><th>setting</th>"#);
        for l in &c.labels {
            let _ = write!(o, "<th>{}</th>", html(l));
        }
        o.push_str("</tr></thead><tbody>");
        for d in &c.differences {
            let _ = write!(o, "<tr><td><code>{}</code></td>", html(&d.path));
            for v in &d.values {
                let _ = write!(o, "<td>{}</td>", html(v));
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table></div></section>");
    }
    let labelled: Vec<(String, &RunResult)> = c.labels.iter().cloned().zip(runs.iter().copied()).collect();
    let cdfs: Vec<Chart> =
        Latency::ALL.iter().map(|&m| cdf_chart(&format!("{}-cdf", m.id()), m, &labelled, Vec::new())).collect();
    o.push_str(r#"<section><h2>Distributions</h2>"#);
    charts(&mut o, &cdfs);
    o.push_str("</section></main>");
    if let Some(r) = runs.first() {
        footer(&mut o, &r.tool, &r.schema);
    }
    Ok(page("compare", &format!("goodput compare · {} runs", c.labels.len()), &o, &data))
}

const CSS: &str = r#"
:root{--bg:#f5f6f8;--card:#fff;--ink:#1c2128;--muted:#5d6875;--line:#e2e6eb;--grid:#eef1f4;
--c0:#0072b2;--c1:#d55e00;--c2:#009e73;--c3:#cc79a7;--c4:#e69f00;--c5:#56b4e9;
--good:#1a7f37;--goodbg:#dafbe1;--info:#0b5cad;--infobg:#ddf0ff;--warn:#9a6700;--warnbg:#fff5cc;--bad:#c9252d;--badbg:#ffe3e3}
@media (prefers-color-scheme:dark){:root{--bg:#0e1116;--card:#161b22;--ink:#e6edf3;--muted:#9ba6b3;--line:#2b323b;--grid:#1f252d;
--c0:#4ea8ea;--c1:#f0824a;--c2:#3fc79a;--c3:#e09ccb;--c4:#f2b84b;--c5:#8fd0f5;
--good:#4ac26b;--goodbg:#12361f;--info:#6cb6ff;--infobg:#102a44;--warn:#d4a72c;--warnbg:#3a2e05;--bad:#ff7b72;--badbg:#43171a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,"DejaVu Sans",sans-serif}
header{background:var(--card);border-bottom:1px solid var(--line);padding:18px 32px 16px}
.brand{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:var(--muted)}
h1{margin:2px 0 6px;font-size:24px;overflow-wrap:anywhere}
h2{font-size:16px;margin:0 0 10px}
.meta{color:var(--muted);margin:2px 0;overflow-wrap:anywhere}
main{padding:4px 32px 24px;max-width:1440px}
section{margin-top:22px}
.verdicts{margin-top:10px;display:flex;flex-wrap:wrap;gap:6px}
.pill{display:inline-block;border-radius:999px;padding:2px 10px;font-size:12.5px;border:1px solid;overflow-wrap:anywhere}
.pill.pass{color:var(--good);background:var(--goodbg);border-color:var(--good)}
.pill.fail{color:var(--bad);background:var(--badbg);border-color:var(--bad)}
.pill.info{color:var(--info);background:var(--infobg);border-color:var(--info)}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:12px;margin-top:18px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px}
.card .k{color:var(--muted);font-size:11.5px;text-transform:uppercase;letter-spacing:.05em}
.card .v{font-size:22px;font-weight:650;margin:3px 0;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.card .v small{font-size:13px;font-weight:500;color:var(--muted)}
.card .s{color:var(--muted);font-size:12.5px}
.tag{display:inline-block;border-radius:4px;padding:0 6px;font-size:11.5px;font-weight:600;vertical-align:middle}
.tag.excellent{color:var(--good);background:var(--goodbg)}
.tag.acceptable,.tag.info{color:var(--info);background:var(--infobg)}
.tag.marginal{color:var(--warn);background:var(--warnbg)}
.tag.poor{color:var(--bad);background:var(--badbg)}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:12px;margin-top:12px}
figure.chart{margin:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 12px}
figcaption{font-weight:600;margin-bottom:2px}
figure svg{width:100%;height:auto;display:block}
.grid line{stroke:var(--grid)}
.axis line{stroke:var(--muted)}
.axis text{fill:var(--muted);font-size:11px}
.axis .xt{text-anchor:middle}.axis .yt{text-anchor:end}
.axis .xl,.axis .yl{text-anchor:middle;fill:var(--ink);font-size:12px}
.c0{stroke:var(--c0);fill:var(--c0)}.c1{stroke:var(--c1);fill:var(--c1)}.c2{stroke:var(--c2);fill:var(--c2)}
.c3{stroke:var(--c3);fill:var(--c3)}.c4{stroke:var(--c4);fill:var(--c4)}.c5{stroke:var(--c5);fill:var(--c5)}
polyline.line{fill:none;stroke-width:2;stroke-linejoin:round}
polyline.dashed{stroke-dasharray:6 4}
circle.pt{stroke:none;fill-opacity:.85}
rect.bar{stroke:none;fill-opacity:.8}
line.guide{stroke:var(--bad);stroke-dasharray:4 3;stroke-width:1.3}
text.guide-label{fill:var(--bad);font-size:11px;text-anchor:end}
rect.band{fill:var(--grid)}text.band-label{fill:var(--muted);font-size:11px}
.mark circle{fill:none;stroke-width:2.5}.mark text{font-size:11.5px;font-weight:650;paint-order:stroke;stroke:var(--card);stroke-width:3px}
.mark-sat circle{stroke:var(--warn)}.mark-sat text{fill:var(--warn)}
.mark-rec circle{stroke:var(--good)}.mark-rec text{fill:var(--good)}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;color:var(--muted);margin-top:2px}
.sw{display:inline-block;width:14px;height:4px;border-radius:2px;margin-right:6px;vertical-align:middle}
.sw.c0{background:var(--c0)}.sw.c1{background:var(--c1)}.sw.c2{background:var(--c2)}.sw.c3{background:var(--c3)}.sw.c4{background:var(--c4)}.sw.c5{background:var(--c5)}
.sw.ring{width:11px;height:11px;border-radius:50%;border:2.5px solid}
.sw.mark-sat{border-color:var(--warn)}.sw.mark-rec{border-color:var(--good)}
.scroll{overflow-x:auto}
table{border-collapse:separate;border-spacing:0;background:var(--card);border:1px solid var(--line);border-radius:10px;font-variant-numeric:tabular-nums;margin-bottom:8px}
th,td{padding:5px 12px;border-bottom:1px solid var(--line);text-align:right;white-space:nowrap}
tr:last-child td{border-bottom:none}
th:first-child,td:first-child{text-align:left}
thead th{font-weight:600;color:var(--muted);font-size:12.5px}
td.text{text-align:left;white-space:normal;overflow-wrap:anywhere}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
.better{color:var(--good)}.worse{color:var(--bad);font-weight:600}
pre{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px;overflow:auto;max-height:480px;
font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
.note{color:var(--muted);font-size:12px;margin:4px 0 0}
.nodata{color:var(--muted);padding:40px 0;text-align:center}
ul.warnings{margin:0;padding-left:20px;color:var(--warn)}
.diagnosis ul{list-style:none;margin:0;padding:0}
.diagnosis li{background:var(--warnbg);border:1px solid var(--warn);border-left-width:4px;border-radius:8px;padding:8px 12px;margin:6px 0;overflow-wrap:anywhere}
.sub{color:var(--muted);margin:0 0 4px;overflow-wrap:anywhere}
h2.sub{font-size:14px;color:var(--ink);margin:16px 0 8px}
ul.notes{margin:0;padding-left:20px;color:var(--muted);overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12px;padding:12px 32px 28px}
"#;

/// Checks, once the page is laid out, that every chart drew what it was
/// given and that the embedded document parses; the verdict goes on
/// `<body>` (`data-render-ok` or `data-render-error`) where a headless
/// browser's `--dump-dom` shows it.
const JS: &str = r#"
(function () {
  var body = document.body, problems = [];
  try {
    var doc = JSON.parse(document.getElementById('goodput-data').textContent);
    if (!doc || typeof doc !== 'object') throw new Error('embedded data is not an object');
    body.setAttribute('data-json-ok', '1');
    var figs = document.querySelectorAll('figure.chart');
    for (var i = 0; i < figs.length; i++) {
      var f = figs[i], want = Number(f.getAttribute('data-points')), drawn = 0;
      var groups = f.querySelectorAll('g.series');
      for (var j = 0; j < groups.length; j++) {
        var g = groups[j], n = Number(g.getAttribute('data-n')), got = 0;
        var line = g.querySelector('polyline');
        if (line) got = line.points.numberOfItems;
        got = Math.max(got, g.querySelectorAll('circle, rect').length);
        if (got !== n) problems.push(f.dataset.chart + ' series ' + j + ' drew ' + got + ' of ' + n);
        drawn += got;
      }
      f.setAttribute('data-drawn', String(drawn));
      if (drawn !== want) problems.push(f.dataset.chart + ' drew ' + drawn + ' of ' + want + ' points');
      var svg = f.querySelector('svg');
      if (want > 0) {
        var box = svg ? svg.getBoundingClientRect() : null;
        if (!box || box.width < 100 || box.height < 50) problems.push(f.dataset.chart + ' has no size');
      }
    }
    body.setAttribute('data-charts', String(figs.length));
  } catch (e) {
    problems.push(String(e && e.message || e));
  }
  if (problems.length) body.setAttribute('data-render-error', problems.join('; '));
  else body.setAttribute('data-render-ok', '1');
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_oversized_document_is_embedded_without_its_records() {
        let doc = serde_json::json!({"schema": "goodput/v1", "requests": vec!["x".repeat(100); 50]});
        let (small, stripped) = embed_within(&doc, 1 << 20, strip_requests).unwrap();
        assert!(!stripped && small.contains("requests"));
        let (text, stripped) = embed_within(&doc, 1000, strip_requests).unwrap();
        assert!(stripped);
        assert_eq!(text, r#"{"schema":"goodput/v1"}"#);
    }
}
