//! The run page.

use super::sections::{by_model, diagnosis, failures, quality, sessions, vllm_view, warnings};
use super::signals::{engine_section, server_section};
use super::{
    card, cdf_chart_of, charts, config_section, embed, footer, header, page, rated_tag, slo_guides, slo_of, table,
    target_line, title_of, without_records, without_scrapes, FROM_PERCENTILES,
};
use crate::escape::html;
use crate::export::ExportError;
use crate::format;
use crate::series::{self, Latency};
use crate::svg::{self, Chart, Guide, Series, Style};
use crate::table::Detail;
use crate::terminal::load_line;
use goodput_core::{RequestRecord, RunResult};
use std::fmt::Write;

/// One run as a page.
pub fn run_page(r: &RunResult) -> Result<String, ExportError> {
    run_page_with(r, None)
}

/// One run as a page, its CDFs, time series and failure messages drawn
/// from `records` where the document holds none (a run saved without
/// `--include-requests`, rendered by the command that holds its records in
/// memory). The page's embedded document stays the one given: the records
/// draw, borrowed, they are not copied in.
pub fn run_page_with(r: &RunResult, records: Option<&[RequestRecord]>) -> Result<String, ExportError> {
    let (data, embedded) = embed(r, || without_records(r), without_scrapes)?;
    // The records that draw: the document's own, else those given.
    let recs = match records {
        Some(recs) if r.requests.is_none() && !recs.is_empty() => Some(recs),
        _ => r.requests.as_deref(),
    };
    let mut o = String::new();
    let load = load_line(&r.config);
    let mut lines = vec![target_line(&r.target, "")];
    if let Some(i) = crate::read::peers::import_info(r) {
        lines.push(format!(
            "imported from {} {} · {} ({})",
            html(&i.tool),
            html(&crate::read::peers::version_text(&i.version)),
            html(&i.source),
            html(&i.format)
        ));
    }
    if !load.is_empty() {
        lines.push(format!("load {}", html(&load)));
    }
    lines.push(format!(
        "{} {} · window {:.2} s ({:.2} → {:.2} s){}",
        html(&r.kind),
        format::started(r.started_unix_s),
        r.window.duration_s,
        r.window.start_s,
        r.window.end_s,
        if r.interrupted { r#" · <span class="tag poor">interrupted: partial result</span>"# } else { "" }
    ));
    if let Some(stop) = format::stop_text(r) {
        lines.push(format!("stopped: {}", html(&stop)));
    }
    let title = title_of(r.config.label.as_deref(), &r.target.model);
    header(&mut o, &format!("{} report", r.kind), &title, &lines);
    verdicts(&mut o, r);
    o.push_str("</header><main>");
    diagnosis(&mut o, r);
    run_cards(&mut o, r);
    run_body(&mut o, r, recs);
    config_section(&mut o, &serde_json::to_value(&r.config)?, embedded)?;
    o.push_str("</main>");
    footer(&mut o, &r.tool, &r.schema);
    Ok(page("run", &format!("goodput {} · {}", r.kind, r.target.model), &o, &data))
}

/// SLO verdict pills: the percentile objectives pass or fail, and the
/// per-request limits with their attainment.
fn verdicts(o: &mut String, r: &RunResult) {
    let stability = r.summary.stability.as_ref();
    if r.slo.is_none() && stability.is_none() {
        return;
    }
    o.push_str(r#"<div class="verdicts">"#);
    if let Some(st) = stability {
        stability_pill(o, st);
    }
    let Some(slo) = &r.slo else {
        o.push_str("</div>");
        return;
    };
    let _ = write!(
        o,
        r#"<span class="pill {c}">SLO {} · {}</span>"#,
        html(&slo.spec),
        if slo.pass { "met" } else { "missed" },
        c = if slo.pass { "pass" } else { "fail" }
    );
    for ob in &slo.objectives {
        let _ = write!(
            o,
            r#"<span class="pill {c}">{} · measured {} ms · {w}</span>"#,
            html(&ob.objective),
            format::objective_measured(ob),
            c = if ob.pass { "pass" } else { "fail" },
            w = html(&format::objective_verdict(ob, r, "pass", "FAIL"))
        );
    }
    if let Some(a) = &slo.attainment {
        let _ = write!(
            o,
            r#"<span class="pill {c}">{} · {} of {} requests good ({}, target {}) · {w}</span>"#,
            html(&crate::terminal::limits_label(slo)),
            a.good_requests,
            a.judged_requests,
            format::value(Some(a.measured), crate::metric::Unit::Ratio),
            format::value(Some(a.target), crate::metric::Unit::Ratio),
            c = if a.pass { "pass" } else { "fail" },
            w = if a.pass { "pass" } else { "FAIL" }
        );
    } else if let Some(g) = &r.summary.goodput {
        // A document written before limits had a target: the share alone,
        // once, under every threshold a good request meets.
        if !slo.limits.is_empty() {
            let _ = write!(
                o,
                r#"<span class="pill info">{} · {} of {} requests good ({})</span>"#,
                html(&crate::terminal::limits_label(slo)),
                g.good_requests,
                g.judged_requests,
                format::value(Some(g.slo_attainment), crate::metric::Unit::Ratio)
            );
        }
    }
    o.push_str("</div>");
}

/// The stability verdict as a pill: the first thing read, as the figures
/// below describe the load only when it is steady.
fn stability_pill(o: &mut String, st: &goodput_core::analysis::stability::Stability) {
    let _ = write!(
        o,
        r#"<span class="pill {c}" id="stability">{}</span>"#,
        html(&crate::terminal::stability_text(st)),
        c = if st.steady { "pass" } else { "fail" }
    );
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
    // A pooling run (embeddings, rerank) has no output, no TTFT and no
    // TPOT: its cards are input throughput and E2E.
    if crate::metric::no_output(s) {
        card(
            o,
            "input throughput",
            &format!("{:.1} <small>tok/s</small>", th.input_tokens_per_s),
            &format!("{:.3} req/s", th.requests_per_s),
        );
        card(
            o,
            "E2E p50",
            &format!("{} <small>ms</small>", format::ms(s.e2e_ms.p(50.0))),
            &format!("p99 {} ms", format::ms(s.e2e_ms.p(99.0))),
        );
    } else {
        card(
            o,
            "output throughput",
            &format!("{:.1} <small>tok/s</small>", th.output_tokens_per_s),
            &format!("{} · {:.3} req/s", format::peak_text(r), th.requests_per_s),
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
                "p99 {} ms · {} from TTFT + TPOT×(n − k_first)",
                format::ms(s.e2e_ms.p(99.0)),
                format::change(rt.latency_model.relative_deviation)
            ),
        );
    }
    if let Some(g) = &s.goodput {
        card(
            o,
            "goodput",
            &format!("{:.3} <small>req/s</small>", g.requests_per_s),
            &format!(
                "{:.1} tok/s · {} {} · useful work {}",
                g.output_tokens_per_s,
                r.slo.as_ref().map_or("attainment", |slo| slo.goodput_share_label()),
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
                "${:.2}/GPU-hour × {}{}",
                c.gpu_hour_usd,
                c.gpus,
                crate::terminal::good_cost(
                    r,
                    c.usd_per_million_good_output_tokens.map(format::usd).unwrap_or("-".into())
                )
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

/// Every latency the run has, with every statistic.
fn latency_table(o: &mut String, r: &RunResult) {
    table(o, &crate::table::latency(r).at(Detail::Full), Some("latency"));
    intervals(o, r);
    repeats(o, r);
}

/// The runs of `--runs N` side by side, then each figure's spread.
fn repeats(o: &mut String, r: &RunResult) {
    let Some(rep) = r.repeats.as_ref() else { return };
    if let Some(t) = crate::repeats::runs(r) {
        table(o, &t.at(Detail::Full), Some("runs"));
    }
    if let Some(t) = crate::repeats::spread(r) {
        table(o, &t.at(Detail::Full), Some("runs"));
    }
    let _ = write!(o, r#"<p class="note">{}.</p>"#, html(&crate::repeats::note(rep)));
}

/// How sure each figure is: the percentiles' intervals, the rates' and
/// the attainment's, and what they assume.
fn intervals(o: &mut String, r: &RunResult) {
    let Some(iv) = crate::intervals::of(r) else { return };
    if let Some(t) = crate::intervals::latency(r) {
        table(o, &t.at(Detail::Full), Some("intervals"));
    }
    if let Some(t) = crate::intervals::rates(r) {
        table(o, &t.at(Detail::Full), Some("intervals"));
    }
    let mut note = crate::intervals::assumption(r, iv);
    if crate::intervals::has_unbounded(r, Detail::Full) {
        note = format!("{note}. {}", crate::intervals::UNBOUNDED);
    }
    let _ = write!(o, r#"<p class="note">{}.</p>"#, html(&note));
}

fn time_charts(r: &RunResult, recs: Option<&[RequestRecord]>) -> Vec<Chart> {
    let Some(ts) = recs.and_then(|recs| series::time_series_of(recs, (r.window.start_s, r.window.end_s))) else {
        return Vec::new();
    };
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
    // A pooling run has no tokens out and no first token: requests in
    // flight alone.
    if crate::metric::no_output(&r.summary) {
        charts.retain(|c| c.id == "inflight-time");
        return charts;
    }
    // An imported run whose file does not time each chunk cannot place its
    // tokens in time.
    if crate::read::peers::peak_output_tokens_per_s(r).is_none() {
        charts.remove(0);
    }
    charts
}

/// The page's sections; `recs`, the records that draw (the document's own
/// or those given beside it).
fn run_body(o: &mut String, r: &RunResult, recs: Option<&[RequestRecord]>) {
    latency_section(o, r, recs);
    over_the_run(o, r, recs);
    server_section(o, r);
    engine_section(o, r);
    throughput_section(o, r);
    sessions(o, r);
    by_model(o, r);
    quality(o, r);
    failures(o, r, recs);
    slo_section(o, r);
    warnings(o, r);
    vllm_view(o, r);
}

fn latency_section(o: &mut String, r: &RunResult, recs: Option<&[RequestRecord]>) {
    o.push_str(r#"<section><h2>Latency</h2>"#);
    latency_table(o, r);
    let slo = slo_of(r);
    let cdfs: Vec<Chart> = Latency::ALL
        .iter()
        .filter(|m| crate::read::peers::recomputed(r, m.field()))
        .filter(|&&m| m == Latency::E2e || !crate::metric::no_output(&r.summary))
        .map(|&m| {
            // As `series::cdf` draws it (the metric recomputed, as filtered
            // above), from `recs` where there are some.
            let cdf = match recs {
                Some(recs) => series::cdf_of_records(recs, m),
                None => series::cdf(r, m),
            };
            cdf_chart_of(
                &format!("{}-cdf", m.id()),
                m,
                vec![(String::new(), cdf)],
                slo_guides(&slo, m),
                FROM_PERCENTILES,
            )
        })
        .collect();
    charts(o, &cdfs);
    o.push_str("</section>");
}

fn over_the_run(o: &mut String, r: &RunResult, recs: Option<&[RequestRecord]>) {
    let tc = time_charts(r, recs);
    o.push_str(r#"<section><h2>Over the run</h2>"#);
    if let Some(st) = &r.summary.stability {
        // The verdict beside its evidence.
        let _ = write!(
            o,
            r#"<p class="verdicts">{}</p><p class="note">Judged from {:.1} s to {:.1} s: requests outstanding should hold level and TTFT should not trend (docs/metrics.md, Stability).</p>"#,
            {
                let mut p = String::new();
                stability_pill(&mut p, st);
                p.replace(r#" id="stability""#, "")
            },
            st.judged_from_s,
            st.judged_to_s
        );
    }
    if tc.is_empty() {
        o.push_str(r#"<p class="note">No time series: the run was saved without per-request records (--include-requests).</p>"#);
    } else {
        charts(o, &tc);
    }
    o.push_str("</section>");
}

fn throughput_section(o: &mut String, r: &RunResult) {
    o.push_str(r#"<section><h2>Throughput, tokens and cost</h2><div class="scroll"><table class="kv"><tbody>"#);
    for (k, v) in throughput_rows(r) {
        let _ = write!(o, "<tr><td>{k}</td><td class=\"text\">{v}</td></tr>");
    }
    cost_row(o, r);
    if let Some(e) = &r.energy {
        let _ = write!(o, "<tr><td>energy</td><td class=\"text\">{}</td></tr>", html(&format::energy(e)));
    }
    o.push_str("</tbody></table></div></section>");
}

/// The throughput table's rows: (name, value as HTML).
fn throughput_rows(r: &RunResult) -> Vec<(&'static str, String)> {
    let s = &r.summary;
    let th = &s.throughput;
    let tok = &s.tokens;
    let sources: Vec<String> = tok.output_sources.iter().map(|(k, n)| format!("{} {n}", html(k))).collect();
    let mut rows: Vec<(&str, String)> = vec![
        ("requests/s", format!("{:.3}", th.requests_per_s)),
        ("output tokens/s", format!("{:.1} ({})", th.output_tokens_per_s, format::peak_text(r))),
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
    if let Some(extra) = tok.prompt_extra.as_ref().and_then(|e| format::prompt_extra(e, r.config.client.as_ref())) {
        rows.push(("prompt extra", html(&extra)));
    }
    if let Some(c) = &r.client {
        rows.push(("client CPU", html(&format::client_cost(c))));
    }
    if let Some(c) = &r.client_stalls {
        rows.push(("client stalls", html(&format::client_stalls(c))));
    }
    if let Some(b) = format::bound_chunks(&r.summary) {
        rows.push(("late reads", html(&b)));
    }
    rows
}

fn cost_row(o: &mut String, r: &RunResult) {
    if let Some(c) = &r.cost {
        let usd = |v: Option<f64>| v.map(format::usd).unwrap_or("-".into());
        let _ = write!(
            o,
            "<tr><td>cost</td><td class=\"text\">${}/GPU-hour × {} = {}/hour · {} per M output tokens · {} per M total · {} per request{}{}</td></tr>",
            format::gpu_hour(c.gpu_hour_usd),
            c.gpus,
            format::usd(c.usd_per_hour),
            usd(c.usd_per_million_output_tokens),
            usd(c.usd_per_million_total_tokens),
            usd(c.usd_per_request),
            c.usd_per_session.map(|v| format!(" · {} per session", usd(Some(v)))).unwrap_or_default(),
            crate::terminal::good_cost(r, usd(c.usd_per_million_good_output_tokens))
        );
    }
}

fn slo_section(o: &mut String, r: &RunResult) {
    let s = &r.summary;
    if let Some(slo) = &r.slo {
        o.push_str(r#"<section><h2>SLO</h2><div class="scroll"><table><thead><tr><th>objective</th><th>limit (ms)</th><th>measured (ms)</th><th>verdict</th></tr></thead><tbody>"#);
        for ob in &slo.objectives {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="{c}">{w}</td></tr>"#,
                html(&ob.objective),
                format::ms(Some(ob.limit_ms)),
                format::objective_measured(ob),
                c = if ob.pass { "better" } else { "worse" },
                w = html(&format::objective_verdict(ob, r, "pass", "FAIL"))
            );
        }
        for q in &slo.quality {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="{c}">{w}</td></tr>"#,
                html(&q.objective),
                q.min,
                q.measured.map(|m| format!("{m:.3}")).unwrap_or("-".into()),
                c = if q.pass { "better" } else { "worse" },
                w = if q.pass { "pass" } else { "FAIL" }
            );
        }
        for l in &slo.unscored {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td colspan="2" class="text">no answer scored by it</td><td class="worse">FAIL</td></tr>"#,
                html(l)
            );
        }
        // The per-request limits pass by their attainment: its target and
        // verdict in the columns, as the terminal and Markdown give them,
        // the goodput they count below.
        if let Some(a) = &slo.attainment {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td>target {:.1}%</td><td>{:.1}% ({} of {} good)</td><td class="{c}">{w}</td></tr>"#,
                html(&crate::terminal::limits_label(slo)),
                a.target * 100.0,
                a.measured * 100.0,
                a.good_requests,
                a.judged_requests,
                c = if a.pass { "better" } else { "worse" },
                w = if a.pass { "pass" } else { "FAIL" }
            );
        }
        if let Some(g) = s.goodput.as_ref().filter(|_| !slo.limits.is_empty() || slo.attainment.is_some()) {
            let _ = write!(
                o,
                r#"<tr><td>{}</td><td colspan="3" class="text">per request: {} of {} good · goodput {:.3} req/s, {:.1} tok/s · useful work {}</td></tr>"#,
                if slo.attainment.is_some() {
                    "goodput".to_string()
                } else {
                    html(&crate::terminal::limits_label(slo))
                },
                g.good_requests,
                g.judged_requests,
                g.requests_per_s,
                g.output_tokens_per_s,
                format::value(Some(g.useful_work), crate::metric::Unit::Ratio)
            );
        }
        o.push_str("</tbody></table></div></section>");
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::*;

    /// The table of failure messages, drawn from records.
    const MESSAGES: &str = r#"<table class="messages">"#;

    /// The page without its embedded document.
    fn body(page: &str) -> &str {
        &page[..page.find(r#"<script type="application/json" id="goodput-data">"#).unwrap()]
    }

    fn data(page: &str) -> &str {
        let start = r#"<script type="application/json" id="goodput-data">"#;
        let rest = &page[page.find(start).unwrap() + start.len()..];
        &rest[..rest.find("</script>").unwrap()]
    }

    /// A rerank run's prompt extra is put down to its fan-out (the query
    /// read with each document) as the terminal and Markdown put it; the
    /// page had blamed a chat template.
    #[test]
    fn a_rerank_run_s_prompt_extra_names_its_documents() {
        let (mut r, _) = run(8, false);
        r.summary.tokens.prompt_extra =
            Some(goodput_core::analysis::summary::PromptExtra { requests: 8, mean: 204.0, min: 204, max: 204 });
        r.config.client = Some(goodput_core::doc::config::ClientSettings {
            api: "rerank".into(),
            rerank_docs: Some(8),
            ..Default::default()
        });
        let rows = throughput_rows(&r);
        let extra = rows.iter().find(|(k, _)| *k == "prompt extra").map(|(_, v)| v.as_str()).unwrap_or_default();
        assert!(extra.contains("each of its 8 documents is an engine request") && !extra.contains("chat"), "{extra}");
    }

    /// The per-request limits' row carries their attainment target, the
    /// share measured and the verdict in the table's columns, as the
    /// terminal and Markdown give them (session 44: the row had
    /// spanned every column, with no target and no pass or fail).
    #[test]
    fn the_limits_row_carries_its_attainment_target_and_verdict() {
        let (mut r, recs) = run(20, true);
        // A limit between the fastest and the slowest first token: some
        // requests meet it, far fewer than 90%.
        let slo: goodput_core::analysis::slo::Slo = "ttft<=41ms".parse().unwrap();
        let (g, report) = goodput_core::analysis::slo::judge(&recs, &slo, r.window.duration_s);
        let a = report.attainment.clone().expect("a limit is judged by its attainment");
        assert!(!a.pass && a.good_requests > 0, "{a:?}");
        (r.summary.goodput, r.slo) = (Some(g), Some(report));
        let page = run_page(&r).unwrap();
        let body = body(&page);
        let table = &body[body.find("<h2>SLO</h2>").unwrap()..];
        let at = table.find("target ").unwrap_or_else(|| panic!("no target: {table}"));
        let row = &table[table[..at].rfind("<tr>").unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        assert!(row.starts_with("<tr><td>ttft&lt;=41ms</td>"), "{row}");
        let want = format!(
            r#"<td>target 90.0%</td><td>{:.1}% ({} of {} good)</td><td class="worse">FAIL</td>"#,
            a.measured * 100.0,
            a.good_requests,
            a.judged_requests
        );
        assert!(row.contains(&want), "{row}");
        assert!(!row.contains("colspan"), "{row}");
    }

    /// Records given beside a document without them draw what the
    /// document's own would (CDFs, time series, failure messages), and the
    /// page embeds the document as given.
    #[test]
    fn records_given_beside_draw_as_the_documents_own() {
        let (with, recs) = run(120, true);
        let (without, _) = run(120, false);
        let own = run_page(&with).unwrap();
        let beside = run_page_with(&without, Some(&recs)).unwrap();
        assert_eq!(body(&beside), body(&own));
        for id in ["ttft-cdf", "itl-cdf", "e2e-cdf", "ttft-time", "inflight-time"] {
            assert!(own.contains(&format!(r#"data-chart="{id}""#)), "no {id}");
        }
        assert!(own.contains(MESSAGES) && !own.contains("No time series"));
        assert_eq!(data(&beside), crate::escape::script_json(&serde_json::to_string(&without).unwrap()));
        // The document's own records draw when it holds some; none given
        // or an empty set leaves the page as the document alone draws it.
        assert_eq!(run_page_with(&with, Some(&recs[..10])).unwrap(), own);
        let bare = run_page(&without).unwrap();
        assert!(bare.contains("No time series") && !bare.contains(MESSAGES));
        assert_eq!(run_page_with(&without, Some(&[])).unwrap(), bare);
    }
}
