//! The sweep page.

use super::{
    card, cdf_chart_of, charts, config_section, counted, embed, footer, header, page, slo_guides, slo_metric, slo_of,
    target_line, title_of, without_records, without_scrapes, FROM_PERCENTILES,
};
use crate::escape::html;
use crate::export::ExportError;
use crate::format;
use crate::metric::Dist;
use crate::series::{self, Latency, SweepSeries, TimeSeries};
use crate::svg::{self, Chart, Guide, Mark, Series, Style};
use crate::table::Detail;
use goodput_core::analysis::slo::ObjectiveResult;
use goodput_core::doc::sweep::{
    saturation_unplaced, sustained_over_steady_stretch, Load, LoadAxis, PointRef, SweepAnalysis, SweepPoint,
    SweepResult,
};
use goodput_core::{RunResult, Slo};
use std::fmt::Write;

/// A sweep as a page.
pub fn sweep_page(sw: &SweepResult) -> Result<String, ExportError> {
    sweep_page_with(sw, None)
}

/// A sweep as a page, its TTFT distributions and a stages run's timeline
/// drawn from what the sweep command computed of the records it held
/// (`held`) where the document holds none. The page embeds the document
/// as given.
pub fn sweep_page_with(sw: &SweepResult, held: Option<&SweepSeries>) -> Result<String, ExportError> {
    let (data, embedded) = embed(sw, || without_point_records(sw), without_point_scrapes)?;
    let mut o = String::new();
    sweep_header(&mut o, sw);
    o.push_str("</header><main><section class=\"cards\">");
    let slo_given = sw.config.judge.slo.is_some() || sw.points.iter().any(|p| p.result.slo.is_some());
    point_cards(&mut o, &sw.analysis, slo_given);
    o.push_str("</section>");
    analysis_notes(&mut o, &sw.analysis);
    if sw.config.mode == "stages" {
        stages_timeline(&mut o, sw, held.and_then(|h| h.timeline.as_ref()));
    }
    sweep_charts(&mut o, sw, held);
    points_table(&mut o, sw);
    repeats_table(&mut o, sw);
    config_section(&mut o, &serde_json::to_value(&sw.config)?, embedded)?;
    o.push_str("</main>");
    footer(&mut o, &sw.tool, &sw.schema);
    Ok(page("sweep", &format!("goodput sweep · {}", sw.target.model), &o, &data))
}

/// `sw` without its points' per-request records, for the embedded
/// document: the rest is cloned. Every field is named, so a field added to
/// [`SweepResult`] or [`SweepPoint`] must be placed here.
fn without_point_records(sw: &SweepResult) -> SweepResult {
    let SweepResult { schema, tool, kind, started_unix_s, interrupted, config, target, points, analysis } = sw;
    SweepResult {
        schema: schema.clone(),
        tool: tool.clone(),
        kind: kind.clone(),
        started_unix_s: *started_unix_s,
        interrupted: *interrupted,
        config: config.clone(),
        target: target.clone(),
        points: points
            .iter()
            .map(|SweepPoint { load, origin, result }| SweepPoint {
                load: *load,
                origin: origin.clone(),
                result: without_records(result),
            })
            .collect(),
        analysis: analysis.clone(),
    }
}

/// `sw` without its points' scrapes, for the embedded document.
fn without_point_scrapes(mut sw: SweepResult) -> SweepResult {
    sw.points = sw.points.into_iter().map(|p| SweepPoint { result: without_scrapes(p.result), ..p }).collect();
    sw
}

/// The header's lines and the recommendation's pill.
fn sweep_header(o: &mut String, sw: &SweepResult) {
    let a = &sw.analysis;
    let loads: Vec<String> = sw.points.iter().map(|p| p.load.label()).collect();
    let mut lines = vec![target_line(&sw.target, "")];
    lines.push(format!("{}: {}", counted(sw.points.len() as u64, "point"), html(&loads.join(", "))));
    lines.push(format!(
        "{} started {}{}",
        html(&sw.kind),
        format::utc(sw.started_unix_s),
        if sw.interrupted { r#" · <span class="tag poor">interrupted: partial result</span>"# } else { "" }
    ));
    if let Some(spec) = sw.points.iter().find_map(|p| p.result.slo.as_ref().map(|s| s.spec.clone())) {
        lines.push(format!("SLO {}", html(&spec)));
    }
    header(o, "sweep report", &title_of(sw.config.label.as_deref(), &sw.target.model), &lines);
    if let Some(rec) = &a.recommendation {
        let _ = write!(o, r#"<div class="verdicts"><span class="pill pass">recommended · {}</span></div>"#, html(rec));
    }
}

/// A card for each point the analysis singles out; `slo_given`, whether the
/// points were judged by an SLO, which tells a card with no point why it has
/// none.
fn point_cards(o: &mut String, a: &SweepAnalysis, slo_given: bool) {
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
    // The card says what the notes say: "not reached" had sat beside a
    // note that the sweep went past saturation.
    point_card(o, "saturation", &a.saturation, saturation_unplaced(a));
    point_card(o, "max throughput", &a.max_throughput, "-");
    // Max goodput is a steady point's, as the recommendation is (the notes
    // say where only points that were not steady had goodput).
    let (no_goodput, none_met) = if slo_given {
        ("no steady point had goodput", "no point met the SLO")
    } else {
        ("no SLO given", "no SLO given")
    };
    point_card(o, "max goodput", &a.max_goodput, no_goodput);
    point_card(o, "highest load meeting the SLO", &a.highest_load_meeting_slo, none_met);
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

/// The SLO the points were judged by (each carries the same).
fn sweep_slo(sw: &SweepResult) -> Option<Slo> {
    sw.points.iter().find_map(|p| slo_of(&p.result))
}

/// Throughput against latency, throughput and goodput by load, and the
/// TTFT distributions of a few loads.
fn sweep_charts(o: &mut String, sw: &SweepResult, held: Option<&SweepSeries>) {
    let (a, pts) = (&sw.analysis, &sw.points);
    // Lines join the points from the lightest load to the heaviest, not in
    // the order they ran (a search adds points between those of the grid),
    // on the scale the analysis orders them on (loads of both kinds by
    // requests per second).
    let axis = LoadAxis::of(pts);
    let mut ordered: Vec<(usize, &SweepPoint)> = pts.iter().enumerate().collect();
    ordered.sort_by(|a, b| axis.at(a.1).total_cmp(&axis.at(b.1)));
    let by_load: Vec<&SweepPoint> = ordered.iter().map(|p| p.1).collect();
    let slo = sweep_slo(sw);
    let p50_at = |d: Dist| move |p: &PointRef| sw.points.get(p.index).and_then(|x| d.of(&x.result.summary).p(50.0));
    let mut list = vec![latency_curve(&by_load, a, &slo, Latency::Ttft, &p50_at(Dist::Ttft))];
    // TPOT has a curve of its own where the SLO judges it.
    if slo.as_ref().is_some_and(|s| judges(s, Latency::Tpot)) {
        list.push(latency_curve(&by_load, a, &slo, Latency::Tpot, &p50_at(Dist::Tpot)));
    }
    list.push(latency_curve(&by_load, a, &slo, Latency::E2e, &p50_at(Dist::E2e)));
    list.push(goodput_by_load(&by_load, a, pts));
    list.push(ttft_by_load(&ordered, a, held, &slo));
    o.push_str(r#"<section><h2>Throughput and latency</h2>"#);
    charts(o, &list);
    o.push_str("</section>");
}

/// Whether the SLO has a limit or an objective on `m`.
fn judges(slo: &Slo, m: Latency) -> bool {
    slo_metric(m)
        .is_some_and(|sm| slo.limits.iter().any(|l| l.metric == sm) || slo.objectives.iter().any(|o| o.metric == sm))
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

/// The dist of a latency the sweep curves plot.
fn dist(m: Latency) -> Dist {
    match m {
        Latency::Ttft => Dist::Ttft,
        Latency::Tpot => Dist::Tpot,
        Latency::Itl => Dist::Itl,
        Latency::E2e => Dist::E2e,
    }
}

/// The tail percentiles a latency's curve plots: those the SLO's
/// objectives on it judge (the p95 of `ttft:p95<=500ms`), else p99.
fn tail_percentiles(slo: &Option<Slo>, m: Latency) -> Vec<f64> {
    let mut ps: Vec<f64> = match (slo, slo_metric(m)) {
        (Some(s), Some(sm)) => s.objectives.iter().filter(|o| o.metric == sm).map(|o| o.percentile).collect(),
        _ => Vec::new(),
    };
    ps.retain(|p| *p != 50.0);
    ps.sort_by(f64::total_cmp);
    ps.dedup();
    if ps.is_empty() {
        ps.push(99.0);
    }
    ps
}

/// A point's percentile `p` of latency `m`: the figure its SLO judged
/// (`slo.objectives[].measured_ms`), else its summary's.
fn percentile_of(r: &RunResult, m: Latency, p: f64) -> Option<f64> {
    let judged = |o: &&ObjectiveResult| Some(o.metric) == slo_metric(m) && o.percentile == p;
    r.slo
        .as_ref()
        .and_then(|s| s.objectives.iter().find(judged))
        .and_then(|o| o.measured_ms)
        .or_else(|| dist(m).of(&r.summary).p(p))
}

/// Throughput against one latency's p50 and its tail (the SLO objective's
/// percentile, else p99), the SLO's limits on it as lines across, the
/// saturation and the recommended point marked at `ref_y`.
fn latency_curve(
    ordered: &[&SweepPoint],
    a: &SweepAnalysis,
    slo: &Option<Slo>,
    m: Latency,
    ref_y: &dyn Fn(&PointRef) -> Option<f64>,
) -> Chart {
    let name = m.id().to_uppercase();
    let p50 = |r: &RunResult| percentile_of(r, m, 50.0);
    let mut s50 = Series::new(format!("{name} p50"), Style::LineDots, 0, curve(ordered, &p50));
    s50.tips = tips(ordered, &p50, &format!("{name} p50"));
    let mut series = vec![s50];
    let objective = |p: f64| {
        slo.as_ref().is_some_and(|s| s.objectives.iter().any(|o| Some(o.metric) == slo_metric(m) && o.percentile == p))
    };
    for (k, p) in tail_percentiles(slo, m).into_iter().enumerate() {
        let tail = move |r: &RunResult| percentile_of(r, m, p);
        let what = format!("{name} p{p}");
        let label = if objective(p) { format!("{what} (the SLO objective's percentile)") } else { what.clone() };
        let mut s = Series::new(label, Style::LineDots, 1 + k, curve(ordered, &tail));
        s.tips = tips(ordered, &tail, &what);
        s.dashed = true;
        series.push(s);
    }
    Chart {
        id: format!("sweep-{}", m.id()),
        title: format!("Throughput vs {name}"),
        x_label: "output tokens/s".into(),
        y_label: format!("{name} (ms)"),
        series,
        marks: ringed(a).into_iter().filter_map(|(p, label, class)| point_mark(p, ref_y, label, class)).collect(),
        guides: slo_guides(slo, m).into_iter().map(|g| Guide { horizontal: true, ..g }).collect(),
        note: Some(
            "One dot per load, in load order; the knee is where latency climbs while throughput stops growing.".into(),
        ),
        ..Default::default()
    }
}

/// Output throughput, and goodput under an SLO, against the load.
fn goodput_by_load(ordered: &[&SweepPoint], a: &SweepAnalysis, pts: &[SweepPoint]) -> Chart {
    let axis = LoadAxis::of(pts);
    let by_load = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<(f64, f64)> {
        ordered.iter().filter_map(|p| Some((axis.at(p), f(&p.result)?))).collect()
    };
    let mut throughput =
        Series::new("output tok/s", Style::LineDots, 0, by_load(&|r| Some(r.summary.throughput.output_tokens_per_s)));
    // Each point's place on the load axis, said: a concurrency point of a
    // sweep of both kinds lies at what it sustained over its steady stretch,
    // not at the req/s the points table gives (its window's), and had read
    // as misplaced (concurrency 256 at 70.92 beside a table's 67.93).
    let sustained = axis == LoadAxis::Mixed;
    // Placed at its steady stretch's rate (`sustained_rps`), or at its window's.
    let steady = |p: &SweepPoint| sustained_over_steady_stretch(&p.result);
    throughput.tips = ordered
        .iter()
        .map(|p| {
            let load = match p.load {
                Load::Concurrency(_) if sustained && steady(p) => format!(
                    "{}: {:.2} req/s sustained over its steady stretch ({:.2} over its window)",
                    p.load.label(),
                    axis.at(p),
                    p.result.summary.throughput.requests_per_s
                ),
                // Not steady: it lies at its window's rate, having no
                // steady stretch.
                Load::Concurrency(_) if sustained => {
                    format!("{}: {:.2} req/s over its window (not steady)", p.load.label(), axis.at(p))
                }
                _ => p.load.label(),
            };
            format!("{load}, {:.1} tok/s", p.result.summary.throughput.output_tokens_per_s)
        })
        .collect();
    let note = sustained.then(|| {
        let each: Vec<String> = ordered
            .iter()
            .filter(|p| matches!(p.load, Load::Concurrency(_)))
            .map(|p| {
                if steady(p) {
                    format!(
                        "{} at {:.2} req/s (the points table's req/s, over its whole window, {:.2})",
                        p.load.label(),
                        axis.at(p),
                        p.result.summary.throughput.requests_per_s
                    )
                } else {
                    format!(
                        "{} at its window's {:.2} req/s (not steady: no steady stretch)",
                        p.load.label(),
                        axis.at(p)
                    )
                }
            })
            .collect();
        format!(
            "A concurrency point lies at the requests per second it sustained over its steady stretch, as the \
             analysis orders the points (its window's rate counts the ramp-up and drain): {}.",
            each.join("; ")
        )
    });
    let mut load_series = vec![throughput];
    let goodput = by_load(&|r| r.summary.goodput.as_ref().map(|g| g.output_tokens_per_s));
    if !goodput.is_empty() {
        load_series.push(Series::new("goodput tok/s (requests meeting the SLO)", Style::LineDots, 2, goodput));
    }
    let load_mark = |p: &PointRef, label: &str, class: &'static str| {
        pts.get(p.index).map(|pt| Mark {
            x: axis.at(pt),
            y: p.goodput_tokens_per_s.unwrap_or(p.output_tokens_per_s),
            label: format!("{label}: {}", p.load.label()),
            class,
            key: None,
            missed: false,
            unsteady: false,
            color: None,
        })
    };
    Chart {
        id: "sweep-goodput".into(),
        title: "Throughput and goodput by load".into(),
        x_label: axis.label().into(),
        y_label: "tokens/s".into(),
        series: load_series,
        marks: ringed(a).into_iter().filter_map(|(p, label, class)| load_mark(p, label, class)).collect(),
        note,
        ..Default::default()
    }
}

/// At most this many overlaid distributions stay readable.
const MAX_CURVES: usize = 6;

/// The loads (positions in `0..points`, lightest first) whose curves a chart
/// of [`MAX_CURVES`] at most draws: every one where there are no more, else
/// `must` (the recommended and the saturation point), the lightest and the
/// heaviest, and then, one at a time, the load farthest from every one
/// chosen, so that the rest spread over the range.
fn shown_loads(points: usize, must: &[usize]) -> Vec<usize> {
    if points <= MAX_CURVES {
        return (0..points).collect();
    }
    let mut v: Vec<usize> = Vec::with_capacity(MAX_CURVES);
    for i in must.iter().copied().chain([0, points - 1]) {
        if i < points && !v.contains(&i) && v.len() < MAX_CURVES {
            v.push(i);
        }
    }
    while v.len() < MAX_CURVES {
        let gap = |i: usize| v.iter().map(|&j| i.abs_diff(j)).min().unwrap_or(usize::MAX);
        // The lighter of two loads equally far from the rest.
        let next = (0..points).filter(|i| !v.contains(i)).max_by_key(|&i| (gap(i), std::cmp::Reverse(i)));
        v.extend(next);
    }
    v.sort_unstable();
    v
}

/// The TTFT distributions of up to six loads, overlaid (the recommended and
/// the saturation point always among them): from each point's records
/// where the document holds them, else from those the sweep command held
/// (`held`), else through the point's percentiles, as the note says.
fn ttft_by_load(
    ordered: &[(usize, &SweepPoint)],
    a: &SweepAnalysis,
    held: Option<&SweepSeries>,
    slo: &Option<Slo>,
) -> Chart {
    let points = ordered.len();
    let at = |p: &Option<PointRef>| p.as_ref().and_then(|p| ordered.iter().position(|(i, _)| *i == p.index));
    let must: Vec<usize> = [at(&a.recommended), at(&a.saturation)].into_iter().flatten().collect();
    let shown = shown_loads(points, &must);
    let curves: Vec<(String, series::Cdf)> = shown
        .iter()
        .map(|&i| {
            let (index, p) = ordered[i];
            let cdf = match (&p.result.requests, held.and_then(|h| h.ttft.get(index)).and_then(Option::as_ref)) {
                (None, Some(c)) => c.clone(),
                _ => series::cdf(&p.result, Latency::Ttft),
            };
            (p.load.label(), cdf)
        })
        .collect();
    let approx: Vec<&str> = curves.iter().filter(|(_, c)| c.from_percentiles).map(|(l, _)| l.as_str()).collect();
    let approx_note = if approx.len() == curves.len() {
        FROM_PERCENTILES.replace("the run was", "the sweep was")
    } else {
        format!(
            "{} drawn from the summary's percentiles (min, pNN, max), the others from every request: the sweep \
             was saved without per-request records (--include-requests).",
            approx.join(", ")
        )
    };
    let guides = slo_guides(slo, Latency::Ttft);
    let mut ttft_cdf = cdf_chart_of("sweep-ttft-cdf", Latency::Ttft, curves, guides, &approx_note);
    ttft_cdf.title = "TTFT distribution by load".into();
    if shown.len() < points {
        let shown = format!("{} of {} loads shown.", shown.len(), points);
        ttft_cdf.note = Some(ttft_cdf.note.map_or(shown.clone(), |n| format!("{shown} {n}")));
    }
    ttft_cdf
}

/// Each stage's span on the run's clock, seconds: the stages' durations
/// added up (each stage's config holds its own, `20s`); a stage whose
/// duration does not read ends where its measurement window does.
fn stage_spans(sw: &SweepResult) -> Vec<(f64, f64)> {
    let mut at = 0.0;
    let mut spans = Vec::with_capacity(sw.points.len());
    for p in &sw.points {
        let d = p.result.config.load.as_ref().and_then(|l| l.duration.as_deref());
        let end = match d.and_then(|d| humantime::parse_duration(d).ok()) {
            Some(d) => at + d.as_secs_f64(),
            None => p.result.window.end_s.max(at),
        };
        spans.push((at, end));
        at = end;
    }
    spans
}

/// A stages run over time: throughput, TTFT and requests in flight, each
/// stage's start marked with its load. From the run's records (those the
/// command held, or the last stage's in the document: it holds every
/// request before its end), else each stage's summary held over its span.
fn stages_timeline(o: &mut String, sw: &SweepResult, held: Option<&TimeSeries>) {
    let spans = stage_spans(sw);
    let guides: Vec<Guide> = sw
        .points
        .iter()
        .zip(&spans)
        .map(|(p, &(at, _))| Guide { at, label: p.load.label(), boundary: true, ..Default::default() })
        .collect();
    let ts = held.cloned().or_else(|| sw.points.iter().rev().find_map(|p| series::time_series(&p.result)));
    let slo = sweep_slo(sw);
    let ttft_limits: Vec<Guide> =
        slo_guides(&slo, Latency::Ttft).into_iter().map(|g| Guide { horizontal: true, ..g }).collect();
    let chart = |id: &str, title: &str, x: &str, y: &str, series: Vec<Series>| Chart {
        id: id.into(),
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        series,
        guides: guides.clone(),
        ..Default::default()
    };
    let list = match &ts {
        Some(ts) => {
            let w = ts.bucket_s;
            let bucket = if w >= 1.0 { format!("{w} s") } else { format!("{} ms", w * 1e3) };
            let mut ttft = chart(
                "stages-ttft",
                "TTFT over the stages",
                "send time (s)",
                "TTFT (ms)",
                vec![Series::new("TTFT of a request, by send time", Style::Dots, 0, ts.ttft.clone())],
            );
            ttft.guides.extend(ttft_limits);
            vec![
                chart(
                    "stages-throughput",
                    "Output throughput over the stages",
                    "time since start (s)",
                    "output tokens/s",
                    vec![Series::new(
                        format!("output tok/s per {bucket} bucket"),
                        Style::Bars { width: w },
                        0,
                        ts.output_tokens_per_s.clone(),
                    )],
                ),
                ttft,
                chart(
                    "stages-inflight",
                    "Requests in flight over the stages",
                    "time since start (s)",
                    "requests in flight",
                    vec![Series::new(
                        format!("mean in flight per {bucket} bucket"),
                        Style::Line,
                        2,
                        svg::steps(&ts.in_flight, w),
                    )],
                ),
            ]
        }
        None => {
            // Each stage's figure held over its span.
            let held_over = |f: &dyn Fn(&RunResult) -> Option<f64>| -> Vec<(f64, f64)> {
                sw.points
                    .iter()
                    .zip(&spans)
                    .filter_map(|(p, &(a, b))| f(&p.result).map(|y| [(a, y), (b, y)]))
                    .flatten()
                    .collect()
            };
            let mut ttft_series = vec![Series::new(
                "TTFT p50 of the stage",
                Style::Line,
                0,
                held_over(&|r| percentile_of(r, Latency::Ttft, 50.0)),
            )];
            for (k, p) in tail_percentiles(&slo, Latency::Ttft).into_iter().enumerate() {
                let mut s = Series::new(
                    format!("TTFT p{p} of the stage"),
                    Style::Line,
                    1 + k,
                    held_over(&|r| percentile_of(r, Latency::Ttft, p)),
                );
                s.dashed = true;
                ttft_series.push(s);
            }
            let mut ttft =
                chart("stages-ttft", "TTFT over the stages", "time since start (s)", "TTFT (ms)", ttft_series);
            ttft.guides.extend(ttft_limits);
            vec![
                chart(
                    "stages-throughput",
                    "Output throughput over the stages",
                    "time since start (s)",
                    "output tokens/s",
                    vec![Series::new(
                        "output tok/s of the stage",
                        Style::Line,
                        0,
                        held_over(&|r| Some(r.summary.throughput.output_tokens_per_s)),
                    )],
                ),
                ttft,
                chart(
                    "stages-inflight",
                    "Requests in flight over the stages",
                    "time since start (s)",
                    "requests in flight",
                    vec![Series::new(
                        "mean in flight of the stage",
                        Style::Line,
                        2,
                        held_over(&|r| Some(r.summary.in_flight.mean)),
                    )],
                ),
            ]
        }
    };
    let _ = write!(
        o,
        r#"<section><h2>Over the stages</h2><p class="note">One run whose load steps at each dashed line; each stage is judged as a point below, the stages before it its warm-up.{}</p>"#,
        if ts.is_none() {
            " Each stage's figures are its summary's, held over its span: the sweep was saved without per-request \
             records (--include-requests keeps them; the sweep's own --html draws every request)."
        } else {
            ""
        }
    );
    charts(o, &list);
    o.push_str("</section>");
}

/// The repeated points' spreads (`sweep --runs N`).
fn repeats_table(o: &mut String, sw: &SweepResult) {
    let Some(t) = crate::repeats::sweep_spread(sw) else { return };
    o.push_str(r#"<section><h2>Runs</h2>"#);
    super::table(o, &t.at(Detail::Full), Some("runs"));
    let _ = write!(o, r#"<p class="note">{}.</p>"#, super::html(crate::repeats::SWEEP_NOTE));
    o.push_str("</section>");
}

/// A row per point, in the order they ran.
fn points_table(o: &mut String, sw: &SweepResult) {
    o.push_str(r#"<section><h2>Points</h2>"#);
    super::table(o, &crate::table::sweep_points(sw).at(Detail::Full), Some("points"));
    o.push_str("</section>");
}

/// The sweep's ringed points: saturation and the recommended point, each
/// with its label and class; one ring where they are the same point (two
/// rings on one point had put their labels over each other and the lines).
fn ringed(a: &SweepAnalysis) -> Vec<(&PointRef, &'static str, &'static str)> {
    let same = matches!((&a.saturation, &a.recommended), (Some(s), Some(r)) if s.index == r.index);
    let mut out = Vec::with_capacity(2);
    if let Some(s) = a.saturation.as_ref().filter(|_| !same) {
        out.push((s, "saturation", "mark-sat"));
    }
    if let Some(r) = &a.recommended {
        out.push((r, if same { "recommended, at saturation" } else { "recommended" }, "mark-rec"));
    }
    out
}

fn point_mark(p: &PointRef, y: impl Fn(&PointRef) -> Option<f64>, label: &str, class: &'static str) -> Option<Mark> {
    Some(Mark {
        x: p.output_tokens_per_s,
        y: y(p)?,
        label: format!("{label}: {}", p.load.label()),
        class,
        key: None,
        missed: false,
        unsteady: false,
        color: None,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::*;
    use goodput_core::doc::sweep::{analyze_sweep, Load};

    /// A sweep of a few points of [`run`] (judged by its SLO), its analysis
    /// empty: no point singled out.
    fn bare_sweep() -> SweepResult {
        let first = run(8, false).0;
        sweep_of(vec![SweepPoint { load: Load::Concurrency(1), origin: "grid".into(), result: first }], false)
    }

    /// A sweep document of `points`, with its header from the first point's
    /// run, analysed or not.
    fn sweep_of(points: Vec<SweepPoint>, analysed: bool) -> SweepResult {
        let first = points[0].result.clone();
        let mut sw = SweepResult {
            schema: first.schema,
            tool: first.tool,
            kind: "sweep".into(),
            started_unix_s: first.started_unix_s,
            interrupted: false,
            config: Default::default(),
            target: first.target,
            analysis: Default::default(),
            points,
        };
        if analysed {
            sw.analysis = analyze_sweep(&sw.points, sw.attainment_target());
        }
        sw
    }

    /// With an SLO given and no point meeting it, the cards say so rather
    /// than that no SLO was given; without one, they say that.
    #[test]
    fn cards_say_no_point_met_the_slo_when_one_was_given() {
        let sw = bare_sweep();
        let html = sweep_page(&sw).unwrap();
        assert!(!html.contains("no SLO given"), "the points were judged by ttft:p95<=100ms");
        // The highest load meeting it; max goodput names a steady point
        // only, so its card says none had goodput.
        assert_eq!(html.matches("no point met the SLO").count(), 1);
        assert_eq!(html.matches("no steady point had goodput").count(), 1);
        let mut unjudged = sw.clone();
        for p in &mut unjudged.points {
            p.result.slo = None;
        }
        let html = sweep_page(&unjudged).unwrap();
        assert!(!html.contains("no point met the SLO") && html.matches("no SLO given").count() == 2);
        // The sweep's own record of the SLO counts too.
        unjudged.config.judge.slo = Some("ttft:p95<=100ms".into());
        assert_eq!(sweep_page(&unjudged).unwrap().matches("no point met the SLO").count(), 1);
    }

    /// In a sweep of both kinds, the throughput-by-load chart says where a
    /// concurrency point lies (what it sustained over its steady stretch)
    /// beside the points table's req/s (its window's): concurrency 256 had
    /// sat at 70.92 with no word, beside a table's 67.93.
    #[test]
    fn a_concurrency_point_on_a_rate_axis_says_where_it_lies() {
        let mut ceiling = run(8, false).0;
        ceiling.summary.throughput.requests_per_s = 67.93;
        let st = ceiling.summary.stability.get_or_insert_with(Default::default);
        (st.steady, st.achieved_rps) = (true, 70.92);
        let mut rate = run(8, false).0;
        rate.config.load = None;
        let pts = vec![
            SweepPoint { load: Load::Concurrency(256), origin: "ceiling".into(), result: ceiling },
            SweepPoint { load: Load::Rate(50.0), origin: "spread".into(), result: rate },
        ];
        let sw = sweep_of(pts, true);
        let by: Vec<&SweepPoint> = sw.points.iter().collect();
        let chart = goodput_by_load(&by, &sw.analysis, &sw.points);
        let note = chart.note.expect("a note on a sweep of both kinds");
        assert!(
            note.contains("concurrency 256 at 70.92 req/s (the points table's req/s, over its whole window, 67.93)"),
            "{note}"
        );
        assert!(
            chart.series[0].tips[0].starts_with("concurrency 256: 70.92 req/s sustained"),
            "{:?}",
            chart.series[0].tips
        );
        assert_eq!(chart.series[0].points[0].0, 70.92);
        // Not steady, it lies at its window's rate and says so, not a
        // steady stretch it did not have.
        let mut unsteady = sw.clone();
        if let Some(st) = unsteady.points[0].result.summary.stability.as_mut() {
            st.steady = false;
        }
        let by: Vec<&SweepPoint> = unsteady.points.iter().collect();
        let chart = goodput_by_load(&by, &unsteady.analysis, &unsteady.points);
        let tip = &chart.series[0].tips[0];
        assert!(tip.starts_with("concurrency 256: 67.93 req/s over its window (not steady), "), "{tip}");
        assert!(chart.note.unwrap().contains("concurrency 256 at its window's 67.93 req/s (not steady"));
        // One kind: the axis is the load's own value, and nothing to say.
        let one = sweep_of(sw.points[..1].to_vec(), true);
        let by: Vec<&SweepPoint> = one.points.iter().collect();
        assert_eq!(goodput_by_load(&by, &one.analysis, &one.points).note, None);
    }

    /// The TTFT chart of a sweep of more loads than it draws keeps the
    /// recommended and the saturation point, the lightest and the heaviest
    /// load, and spreads the rest (session 44: of seven loads, an
    /// index formula had dropped the fourth, the recommended one).
    #[test]
    fn the_ttft_chart_keeps_the_recommended_and_the_saturation_point() {
        assert_eq!(shown_loads(4, &[3]), [0, 1, 2, 3]);
        for points in 7..=20 {
            for rec in 0..points {
                for sat in [rec, points - 1 - rec / 2] {
                    let v = shown_loads(points, &[rec, sat]);
                    assert_eq!(v.len(), MAX_CURVES, "{points} loads: {v:?}");
                    assert!(v.windows(2).all(|w| w[0] < w[1]), "{v:?}");
                    for must in [rec, sat, 0, points - 1] {
                        assert!(v.contains(&must), "{points} loads, recommended {rec}, saturation {sat}: {v:?}");
                    }
                }
            }
        }
        // The page: seven loads, the recommended the fourth.
        let base = run(8, false).0;
        let points: Vec<SweepPoint> = (0..7u64)
            .map(|c| {
                let mut r = base.clone();
                r.summary.in_flight.mean = c as f64 + 1.0;
                SweepPoint { load: Load::Concurrency(c + 1), origin: "grid".into(), result: r }
            })
            .collect();
        let mut sw = sweep_of(points, false);
        sw.analysis.recommended = Some(point_ref_of(&sw, 3));
        let html = sweep_page(&sw).unwrap();
        let chart = &html[html.find("TTFT distribution by load").unwrap()..];
        let chart = &chart[..chart.find("</figure>").unwrap_or(chart.len())];
        assert!(chart.contains("concurrency 4"), "the recommended load is drawn");
        assert!(chart.contains("6 of 7 loads shown"), "{chart}");
    }

    /// Saturation and the recommended point at one load are one ring,
    /// labelled once (two rings there had put their labels over each
    /// other); at two loads, two rings.
    #[test]
    fn saturation_and_the_recommended_point_at_one_load_are_one_ring() {
        let base = run(8, false).0;
        let points: Vec<SweepPoint> = (0..3u64)
            .map(|c| SweepPoint { load: Load::Concurrency(c + 1), origin: "grid".into(), result: base.clone() })
            .collect();
        let mut sw = sweep_of(points, false);
        (sw.analysis.saturation, sw.analysis.recommended) = (Some(point_ref_of(&sw, 2)), Some(point_ref_of(&sw, 2)));
        let labels = |sw: &SweepResult| -> Vec<String> {
            let by: Vec<&SweepPoint> = sw.points.iter().collect();
            goodput_by_load(&by, &sw.analysis, &sw.points).marks.into_iter().map(|m| m.label).collect()
        };
        assert_eq!(labels(&sw), ["recommended, at saturation: concurrency 3"]);
        sw.analysis.recommended = Some(point_ref_of(&sw, 1));
        assert_eq!(labels(&sw), ["saturation: concurrency 3", "recommended: concurrency 2"]);
    }

    fn point_ref_of(sw: &SweepResult, i: usize) -> PointRef {
        let p = &sw.points[i];
        PointRef {
            index: i,
            load: p.load,
            output_tokens_per_s: p.result.summary.throughput.output_tokens_per_s,
            ttft_p50_ms: None,
            goodput_tokens_per_s: None,
            usd_per_million_output_tokens: None,
        }
    }

    /// The page's title is `label · model`, as a run's is; a blank label
    /// leaves the model alone, with no separator.
    #[test]
    fn the_title_carries_the_label_as_a_runs_does() {
        let mut sw = bare_sweep();
        sw.config.label = Some("nightly".into());
        assert!(sweep_page(&sw).unwrap().contains("<h1>nightly · m</h1>"));
        sw.config.label = Some(" ".into());
        assert!(sweep_page(&sw).unwrap().contains("<h1>m</h1>"));
        let (mut r, _) = run(8, false);
        r.config.label = Some(String::new());
        assert!(super::super::run_page(&r).unwrap().contains("<h1>m</h1>"));
        r.config.label = Some("a".into());
        assert!(super::super::run_page(&r).unwrap().contains("<h1>a · m</h1>"));
    }

    /// An oversized sweep is embedded without its points' records, as it
    /// was when they were stripped from the whole document's `Value`.
    #[test]
    fn an_oversized_sweep_is_embedded_without_its_points_records() {
        let points: Vec<SweepPoint> = [(1, true), (2, false), (4, true)]
            .into_iter()
            .map(|(c, keep)| SweepPoint {
                load: Load::Concurrency(c),
                origin: "grid".into(),
                result: run(20 * c, keep).0,
            })
            .collect();
        let sw = sweep_of(points, true);
        let whole = serde_json::to_string(&sw).unwrap();
        let (text, embedded) =
            super::super::embed_within(&sw, whole.len() - 1, || without_point_records(&sw), without_point_scrapes)
                .unwrap();
        assert_eq!(embedded, super::super::Embedded::WithoutRecords);
        let mut v = serde_json::to_value(&sw).unwrap();
        for p in v["points"].as_array_mut().unwrap() {
            p["result"].as_object_mut().unwrap().remove("requests");
        }
        assert_eq!(text, serde_json::to_string(&v).unwrap());
        assert!(sw.points[0].result.requests.is_some() && !text.contains(r#""requests":["#));
    }

    /// A sweep whose points' scrapes alone pass the limit is embedded
    /// without them too, every point's other signals kept.
    #[test]
    fn a_sweep_too_large_without_its_records_is_embedded_without_its_scrapes() {
        use goodput_core::prometheus::scrape::{GaugeSignal, ScrapeSample, ServerSignals, Signals};
        let points: Vec<SweepPoint> = [1, 2]
            .into_iter()
            .map(|c| {
                let mut result = run(20 * c, true).0;
                let samples: Vec<ScrapeSample> = (0..100)
                    .map(|k| {
                        let mut signals = Signals::default();
                        signals.gauges.insert(GaugeSignal::RunningRequests, k as f64);
                        ScrapeSample { t: std::time::Duration::from_millis(100 * k), signals }
                    })
                    .collect();
                result.server_signals =
                    Some(ServerSignals { scrapes: 100, interval_s: 0.1, samples, ..Default::default() });
                SweepPoint { load: Load::Concurrency(c), origin: "grid".into(), result }
            })
            .collect();
        let sw = sweep_of(points, true);
        let lean = serde_json::to_string(&without_point_records(&sw)).unwrap();
        let (text, embedded) =
            super::super::embed_within(&sw, lean.len() - 1, || without_point_records(&sw), without_point_scrapes)
                .unwrap();
        assert_eq!(embedded, super::super::Embedded::WithoutRecordsOrScrapes);
        let back: SweepResult = serde_json::from_str(&text).unwrap();
        for (got, want) in back.points.iter().zip(&sw.points) {
            let (g, w) = (got.result.server_signals.as_ref().unwrap(), want.result.server_signals.as_ref().unwrap());
            assert!(g.samples.is_empty() && !w.samples.is_empty() && got.result.requests.is_none());
            assert_eq!((g.scrapes, &g.window), (w.scrapes, &w.window));
            assert_eq!(got.result.summary, want.result.summary);
        }
    }
}
