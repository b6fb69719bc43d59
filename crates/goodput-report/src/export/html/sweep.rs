//! The sweep page.

use super::{card, cdf_chart, charts, config_section, embed, footer, header, page, target_line};
use crate::escape::html;
use crate::export::ExportError;
use crate::format;
use crate::metric::Dist;
use crate::series::Latency;
use crate::svg::{Chart, Mark, Series, Style};
use goodput_core::sweep::{Load, PointRef, SweepAnalysis, SweepPoint, SweepResult};
use goodput_core::RunResult;
use std::fmt::Write;

/// A sweep as a page.
pub fn sweep_page(sw: &SweepResult) -> Result<String, ExportError> {
    let (data, stripped) = embed(sw, strip_point_requests)?;
    let mut o = String::new();
    sweep_header(&mut o, sw);
    o.push_str("</header><main><section class=\"cards\">");
    point_cards(&mut o, &sw.analysis);
    o.push_str("</section>");
    analysis_notes(&mut o, &sw.analysis);
    sweep_charts(&mut o, sw);
    points_table(&mut o, sw);
    config_section(&mut o, &serde_json::to_value(&sw.config)?, stripped)?;
    o.push_str("</main>");
    footer(&mut o, &sw.tool, &sw.schema);
    Ok(page("sweep", &format!("goodput sweep · {}", sw.target.model), &o, &data))
}

/// Leaves each point's per-request records out of the embedded document.
fn strip_point_requests(v: &mut serde_json::Value) {
    if let Some(points) = v.get_mut("points").and_then(|p| p.as_array_mut()) {
        for p in points {
            p.get_mut("result").and_then(|r| r.as_object_mut()).map(|m| m.remove("requests"));
        }
    }
}

/// The header's lines and the recommendation's pill.
fn sweep_header(o: &mut String, sw: &SweepResult) {
    let a = &sw.analysis;
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
    header(o, "sweep report", &sw.target.model, &lines);
    if let Some(rec) = &a.recommendation {
        let _ = write!(o, r#"<div class="verdicts"><span class="pill pass">recommended · {}</span></div>"#, html(rec));
    }
}

/// A card for each point the analysis singles out.
fn point_cards(o: &mut String, a: &SweepAnalysis) {
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
    point_card(o, "recommended", &a.recommended, "no recommendation");
    point_card(o, "saturation", &a.saturation, "not reached");
    point_card(o, "max throughput", &a.max_throughput, "-");
    point_card(o, "max goodput", &a.max_goodput, "no SLO given");
    point_card(o, "highest load meeting the SLO", &a.highest_load_meeting_slo, "none (or no SLO given)");
}

fn analysis_notes(o: &mut String, a: &SweepAnalysis) {
    if !a.notes.is_empty() {
        o.push_str(r#"<section><ul class="warnings">"#);
        for n in &a.notes {
            let _ = write!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul></section>");
    }
}

/// Throughput against latency, throughput and goodput by load, and the
/// TTFT distributions of a few loads.
fn sweep_charts(o: &mut String, sw: &SweepResult) {
    let (a, pts) = (&sw.analysis, &sw.points);
    // Lines join the points from the lightest load to the heaviest, not in
    // the order they ran (a search adds points between those of the grid).
    // Requests in flight order loads of either kind: more load, more in
    // flight, for a closed loop and an open one alike.
    let mut ordered: Vec<&SweepPoint> = pts.iter().collect();
    ordered.sort_by(|a, b| a.result.summary.in_flight.mean.total_cmp(&b.result.summary.in_flight.mean));
    let p50_at = |d: Dist| move |p: &PointRef| sw.points.get(p.index).and_then(|x| d.of(&x.result.summary).p(50.0));
    let ttft_curve = latency_curve(&ordered, a, "sweep-ttft", "TTFT", Dist::Ttft, &p50_at(Dist::Ttft));
    let e2e_curve = latency_curve(&ordered, a, "sweep-e2e", "E2E", Dist::E2e, &p50_at(Dist::E2e));
    let goodput_chart = goodput_by_load(&ordered, a, pts);
    let ttft_cdf = ttft_by_load(&ordered, pts.len());
    o.push_str(r#"<section><h2>Throughput and latency</h2>"#);
    charts(o, &[ttft_curve, e2e_curve, goodput_chart, ttft_cdf]);
    o.push_str("</section>");
}

/// A tooltip per point that has the figure, in load order.
fn tips(ordered: &[&SweepPoint], f: &dyn Fn(&RunResult) -> Option<f64>, what: &str) -> Vec<String> {
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
}

/// (output tokens/s, the figure) per point that has the figure, in load order.
fn curve(ordered: &[&SweepPoint], f: &dyn Fn(&RunResult) -> Option<f64>) -> Vec<(f64, f64)> {
    ordered.iter().filter_map(|p| Some((p.result.summary.throughput.output_tokens_per_s, f(&p.result)?))).collect()
}

/// Throughput against one latency's p50 and p99, the saturation and the
/// recommended point marked at `ref_y`.
fn latency_curve(
    ordered: &[&SweepPoint],
    a: &SweepAnalysis,
    id: &str,
    name: &str,
    d: Dist,
    ref_y: &dyn Fn(&PointRef) -> Option<f64>,
) -> Chart {
    let p50 = |r: &RunResult| d.of(&r.summary).p(50.0);
    let p99 = |r: &RunResult| d.of(&r.summary).p(99.0);
    let mut s50 = Series::new(format!("{name} p50"), Style::LineDots, 0, curve(ordered, &p50));
    s50.tips = tips(ordered, &p50, &format!("{name} p50"));
    let mut s99 = Series::new(format!("{name} p99"), Style::LineDots, 1, curve(ordered, &p99));
    s99.tips = tips(ordered, &p99, &format!("{name} p99"));
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
            "One dot per load, in load order; the knee is where latency climbs while throughput stops growing.".into(),
        ),
        ..Default::default()
    }
}

/// Output throughput, and goodput under an SLO, against the load.
fn goodput_by_load(ordered: &[&SweepPoint], a: &SweepAnalysis, pts: &[SweepPoint]) -> Chart {
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
    Chart {
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
    }
}

/// The TTFT distributions of up to six loads, overlaid.
fn ttft_by_load(ordered: &[&SweepPoint], points: usize) -> Chart {
    // At most six overlaid distributions stay readable: spread them over the loads.
    let shown: Vec<usize> = if points <= 6 {
        (0..points).collect()
    } else {
        let mut v: Vec<usize> = (0..6).map(|k| (k * (points - 1) + 2) / 5).collect();
        v.dedup();
        v
    };
    let overlay: Vec<(String, &RunResult)> =
        shown.iter().map(|&i| (ordered[i].load.label(), &ordered[i].result)).collect();
    let mut ttft_cdf = cdf_chart("sweep-ttft-cdf", Latency::Ttft, &overlay, Vec::new());
    ttft_cdf.title = "TTFT distribution by load".into();
    if shown.len() < points {
        ttft_cdf.note = Some(format!("{} of {} loads shown.", shown.len(), points));
    }
    ttft_cdf
}

/// A row per point, in the order they ran.
fn points_table(o: &mut String, sw: &SweepResult) {
    let (a, pts) = (&sw.analysis, &sw.points);
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
