//! What the HTML charts show, read back from the SVG's own coordinates: time
//! axes that end near the data, a CDF cut at p99.9 when one outlier would
//! squeeze it, a sweep's curves at the SLO objective's percentile with its
//! limit drawn, TTFT distributions from the records a sweep held, a stages
//! run's timeline, the NOT STEADY reason in the sweep's tables, and a
//! frontier's points that miss the SLO drawn apart from those that meet it.

use crate::common::*;
use goodput_core::analysis::stability::Stability;
use goodput_core::doc::sweep::SweepResult;
use goodput_core::RunResult;
use goodput_report::export::html::{frontier_page, overlay_page, run_page, sweep_page, sweep_page_with};
use goodput_report::series::{cdf_of_records, Latency, SweepSeries};
use goodput_report::{format, terminal};
use std::time::Duration;

/// The plot's left and right edges in the SVG (its margins).
const PLOT_LEFT: f64 = 64.0;
const PLOT_RIGHT: f64 = 620.0;

/// One chart's `<figure>`, by its `data-chart` id.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!(r#"data-chart="{id}""#)).unwrap_or_else(|| panic!("no chart {id}"));
    let rest = &html[start..];
    &rest[..rest.find("</figure>").unwrap()]
}

fn attr(tag: &str, k: &str) -> f64 {
    let v = tag.split(&format!(" {k}=\"")).nth(1).unwrap_or_else(|| panic!("no {k} in {tag}"));
    v.split('"').next().unwrap().parse().unwrap()
}

fn data_points(fig: &str) -> usize {
    fig.split(r#"data-points=""#).nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
}

/// The text of each `<text class="{class}" …>` in `fig` with the tag.
fn texts<'a>(fig: &'a str, class: &str) -> Vec<(&'a str, &'a str)> {
    fig.split(&format!(r#"<text class="{class}""#))
        .skip(1)
        .map(|t| {
            let (tag, rest) = t.split_once('>').unwrap();
            (tag, rest.split('<').next().unwrap())
        })
        .collect()
}

/// The x axis's ticks: (value, x px).
fn x_ticks(fig: &str) -> Vec<(f64, f64)> {
    texts(fig, "xt").iter().map(|(tag, t)| (t.parse().unwrap(), attr(tag, "x"))).collect()
}

/// The y axis's ticks: (value, y px of the grid line; the label sits 3.5 px lower).
fn y_ticks(fig: &str) -> Vec<(f64, f64)> {
    texts(fig, "yt").iter().map(|(tag, t)| (t.parse().unwrap(), attr(tag, "y") - 3.5)).collect()
}

/// Where value `v` falls on an axis given by two of its ticks.
fn scale(ticks: &[(f64, f64)], v: f64) -> f64 {
    let ((v0, p0), (v1, p1)) = (ticks[0], ticks[ticks.len() - 1]);
    p0 + (v - v0) / (v1 - v0) * (p1 - p0)
}

/// The rightmost x px the plotted data reach: bars' right edges, lines' and dots' points.
fn data_right_px(fig: &str) -> f64 {
    let plot = fig.split(r#"<g class="plot">"#).nth(1).unwrap();
    let bars = plot.split("<rect class=\"bar").skip(1).map(|r| attr(r, "x") + attr(r, "width"));
    let dots = plot.split("<circle class=\"pt").skip(1).map(|c| attr(c, "cx"));
    let lines = plot.split("points=\"").skip(1).flat_map(|l| {
        l.split('"').next().unwrap().split(' ').map(|p| p.split(',').next().unwrap().parse::<f64>().unwrap())
    });
    bars.chain(dots).chain(lines).fold(f64::NAN, f64::max)
}

/// A minute and a bit of one user, a request a second or so: a run that
/// ends a little past 60 s, as a `--duration 60s` run does.
fn minute_run() -> RunResult {
    let p = Profile { requests: 63, concurrency: 1, itl_ms: 30.0, ..Profile::default() };
    run_of("llama-3.1-8b", p, records(p), None, true)
}

/// A 60 s run's time axes end at the first round tick past the data, not
/// a step further (80 s, as they did): within one tick of the data's end
/// and at most a fifth past it.
#[test]
fn time_axes_end_within_a_tick_of_the_data() {
    let r = minute_run();
    let end = r.requests.as_ref().unwrap().iter().map(|q| q.end).max().unwrap().as_secs_f64();
    assert!((60.5..63.0).contains(&end), "{end}");
    let html = run_page(&r).unwrap();
    for id in ["throughput-time", "inflight-time", "ttft-time"] {
        let fig = figure(&html, id);
        let ticks = x_ticks(fig);
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        assert_eq!((first.0, last.1), (0.0, PLOT_RIGHT), "{id}: {ticks:?}");
        let step = ticks[1].0 - ticks[0].0;
        let data_end = (data_right_px(fig) - PLOT_LEFT) / (PLOT_RIGHT - PLOT_LEFT) * last.0;
        assert!(data_end > 50.0 && data_end <= last.0 + 1e-9, "{id}: data to {data_end}, axis to {}", last.0);
        assert!(last.0 - data_end < step, "{id}: axis to {}, data to {data_end}, a tick {step}", last.0);
        assert!(last.0 - data_end <= 0.2 * data_end, "{id}: axis to {}, data to {data_end}", last.0);
    }
}

/// One 2.7 s stall among 5 ms gaps: the ITL CDF's axis stops at p99.9,
/// where the body ends, and the note says so and names the maximum.
#[test]
fn a_far_outlier_is_cut_off_the_cdf_axis_and_told() {
    let p = Profile::default();
    let mut recs = records(p);
    let stall = Duration::from_millis(2700);
    let r = &mut recs[10];
    let mut chunks: Vec<goodput_core::doc::record::OutputChunk> = r.chunks.iter().collect();
    for c in chunks.iter_mut().skip(16) {
        c.t += stall;
    }
    r.chunks = chunks.into();
    r.stream_end = r.stream_end.map(|t| t + stall);
    r.end += stall;
    let run = run_of("llama-3.1-8b", p, recs, None, true);
    assert!(run.summary.itl_ms.count >= 1000 && run.summary.itl_ms.max.unwrap() > 2700.0);
    let html = run_page(&run).unwrap();
    let fig = figure(&html, "itl-cdf");
    let last = x_ticks(fig).last().unwrap().0;
    assert!(last <= 20.0, "the axis runs to {last} ms for gaps of about 5 ms");
    assert!(fig.contains("The x axis stops at p99.9 ("), "{fig}");
    assert!(fig.contains(&format!("up to {} ms, lie beyond it", format::ms(run.summary.itl_ms.max))), "{fig}");
    // The line reaches the body's end: the axis is not emptier than it says.
    assert!(data_right_px(fig) > PLOT_LEFT + 0.5 * (PLOT_RIGHT - PLOT_LEFT), "{fig}");
    // TTFT, without such a tail, is drawn whole.
    assert!(!figure(&html, "ttft-cdf").contains("The x axis stops"));
}

/// A run of a few hundred requests with one stall: p99.9 is the stall
/// itself, so the axis stops at the sample before it, and says which.
#[test]
fn one_stall_among_few_samples_is_cut_off_the_cdf_axis_too() {
    let p = Profile { requests: 300, ..Profile::default() };
    let mut recs = records(p);
    let stall = Duration::from_millis(2700);
    let r = &mut recs[10];
    r.end += stall;
    if let Some(t) = r.stream_end.as_mut() {
        *t += stall;
    }
    let mut chunks: Vec<goodput_core::doc::record::OutputChunk> = r.chunks.iter().collect();
    if let Some(c) = chunks.last_mut() {
        c.t += stall;
    }
    r.chunks = chunks.into();
    let run = run_of("llama-3.1-8b", p, recs, None, true);
    assert!(run.summary.e2e_ms.count < 1000 && run.summary.e2e_ms.max.unwrap() > 2700.0);
    let html = run_page(&run).unwrap();
    let fig = figure(&html, "e2e-cdf");
    assert!(fig.contains("The x axis stops at p99.6 ("), "{fig}");
    assert!(x_ticks(fig).last().unwrap().0 < 2700.0, "{fig}");
}

/// The sweep's latency curves plot the percentile the SLO's objective
/// judges (p95 here, p90 for TPOT), each point at the figure its SLO
/// measured, and the objective's limit as a labelled line across.
#[test]
fn sweep_curves_plot_the_objectives_percentile_and_its_limit() {
    let sw = sweep_of("ttft:p95<=250ms,tpot:p90<=9ms", |i| i % 2 == 0);
    let html = sweep_page(&sw).unwrap();
    for (id, name, p, limit, spec) in [
        ("sweep-ttft", "TTFT", 95.0, 250.0, "ttft:p95&lt;=250ms"),
        ("sweep-tpot", "TPOT", 90.0, 9.0, "tpot:p90&lt;=9ms"),
    ] {
        let fig = figure(&html, id);
        assert!(fig.contains(&format!("{name} p{p} (the SLO objective&#39;s percentile)")), "{id}: {fig}");
        assert!(!fig.contains(&format!("{name} p99")), "{id}: p99 is not what the SLO judges");
        for pt in &sw.points {
            let measured = pt.result.slo.as_ref().unwrap().objectives.iter().find(|o| o.percentile == p).unwrap();
            let tip = format!(
                "{}: {:.1} tok/s, {name} p{p} {} ms",
                pt.load.label(),
                pt.result.summary.throughput.output_tokens_per_s,
                format::ms(measured.measured_ms)
            );
            assert!(fig.contains(&tip), "{id}: no {tip}");
        }
        // The line across at the limit, labelled with the objective.
        let (tag, label) = texts(fig, "guide-label").into_iter().next().unwrap_or_else(|| panic!("{id}: no guide"));
        assert_eq!(label, format!("objective {spec}"));
        let line = fig.split(r#"<line class="guide""#).nth(1).unwrap();
        let y = attr(line, "y1");
        assert_eq!((attr(line, "x1"), attr(line, "x2"), attr(line, "y2")), (PLOT_LEFT, PLOT_RIGHT, y), "{id}");
        assert!((y - scale(&y_ticks(fig), limit)).abs() < 0.1, "{id}: the line at {y} px is not at {limit} ms");
        assert!(attr(tag, "y") < y, "{id}: the label sits on its line");
    }
    // A sweep whose SLO names no TPOT has no TPOT curve; with no objective
    // on E2E, its curve keeps p99.
    assert!(!sweep_page(&sweep()).unwrap().contains(r#"data-chart="sweep-tpot""#));
    assert!(figure(&html, "sweep-e2e").contains("E2E p99"));
}

/// A sweep's points, none saved with their records.
fn without_records(sw: &SweepResult) -> SweepResult {
    let mut bare = sw.clone();
    for p in &mut bare.points {
        p.result.requests = None;
    }
    bare
}

/// The TTFT distributions by load come from every request: those the
/// document holds, else those the sweep command held as its points ran;
/// only with neither are they drawn through the percentiles, and the note
/// names the loads so drawn.
#[test]
fn sweep_ttft_distributions_come_from_the_records_the_sweep_held() {
    let full = sweep_of(SWEEP_SLO, |_| true);
    let held = SweepSeries {
        ttft: full
            .points
            .iter()
            .map(|p| Some(cdf_of_records(p.result.requests.as_ref().unwrap(), Latency::Ttft)))
            .collect(),
        timeline: None,
    };
    let bare = without_records(&full);
    let every_request: usize = full.points.iter().map(|p| 2 * p.result.summary.ttft_ms.count as usize).sum();
    for html in [sweep_page(&full).unwrap(), sweep_page_with(&bare, Some(&held)).unwrap()] {
        let fig = figure(&html, "sweep-ttft-cdf");
        assert!(!fig.contains("percentiles"), "{fig}");
        assert_eq!(data_points(fig), every_request, "each request steps the CDF");
    }
    let fig = figure(&sweep_page(&bare).unwrap(), "sweep-ttft-cdf").to_string();
    assert!(fig.contains("Drawn from the summary&#39;s percentiles") && fig.contains("the sweep was saved"), "{fig}");
    // Half the points saved with their records: the note names the others.
    let html = sweep_page(&sweep()).unwrap();
    let fig = figure(&html, "sweep-ttft-cdf");
    assert!(
        fig.contains("concurrency 2, concurrency 8, concurrency 32 drawn from the summary&#39;s percentiles"),
        "{fig}"
    );
}

/// NOT STEADY comes with its reason, which the verdict already holds: in
/// the terminal's row, and in the page's points table, which has a steady
/// column.
#[test]
fn sweep_tables_say_why_a_point_is_not_steady() {
    let mut sw = sweep();
    for p in &mut sw.points {
        p.result.summary.stability = Some(Stability { steady: true, ..Default::default() });
    }
    sw.points[5].result.summary.stability = Some(unsteady(WHY));
    let p = &sw.points[5];
    let row = terminal::sweep::row(p.load, "grid", &p.result, true, 0.9);
    assert!(row.ends_with(&format!("NOT STEADY: {WHY}")), "{row}");
    let html = sweep_page(&sw).unwrap();
    let table = &html[html.find(r#"<table class="points">"#).unwrap()..];
    let table = &table[..table.find("</table>").unwrap()];
    assert!(table.contains("<th>$ per M</th><th>steady</th></tr>"), "{table}");
    assert_eq!(table.matches(r#"<td><span class="better">steady</span></td></tr>"#).count(), 5);
    assert_eq!(table.matches(r#"<td><span class="worse">NOT STEADY</span></td></tr>"#).count(), 1);
    // The reason on a line of its own, under its point's row.
    let (before, after) = table.split_once(r#"<tr class="why">"#).unwrap();
    assert!(before.rsplit("<tr>").next().unwrap().starts_with("<td>concurrency 32"), "{table}");
    assert!(after.starts_with(&format!(r#"<td colspan="15" class="text">NOT STEADY: {WHY}</td></tr>"#)), "{after}");
}

/// A stages run has a timeline: throughput, TTFT and requests in flight
/// over time, each stage's start a labelled line; drawn from the records
/// where the document holds them, else from each stage's summary held over
/// its span, and the page says which. Its points table has the steady
/// column and the reason.
#[test]
fn a_stages_page_has_a_timeline_with_its_stages_marked() {
    let sw = stages_sweep();
    assert!(sw.points[1].result.requests.is_some());
    for (doc, from_records) in [(sw.clone(), true), (without_records(&sw), false)] {
        let html = sweep_page(&doc).unwrap();
        let section = &html[html.find("<h2>Over the stages</h2>").expect("a timeline")..];
        let section = &section[..section.find("</section>").unwrap()];
        assert_eq!(section.contains("held over its span"), !from_records, "{section}");
        for id in ["stages-throughput", "stages-ttft", "stages-inflight"] {
            let fig = figure(section, id);
            assert!(data_points(fig) > 0, "{id}");
            let labels: Vec<&str> = texts(fig, "guide-label boundary").iter().map(|t| t.1).collect();
            assert_eq!(labels, ["concurrency 4", "concurrency 8"], "{id}");
            // The second stage starts 20 s in.
            let line = fig.split(r#"<line class="guide boundary""#).nth(2).unwrap();
            assert!((attr(line, "x1") - scale(&x_ticks(fig), 20.0)).abs() < 0.1, "{id}: {line}");
        }
        if from_records {
            // Every request of the last stage (the document's holds them), by send time.
            let ok = doc.points[1].result.summary.requests.completed as usize;
            assert_eq!(data_points(figure(section, "stages-ttft")), ok);
        }
        assert!(html.contains("<th>steady</th>") && html.contains(&format!("NOT STEADY: {WHY}")));
    }
    // Only a stages sweep has one.
    assert!(!sweep_page(&sweep()).unwrap().contains("Over the stages"));
}

/// Each `<circle class="pt …">` of `fig`'s plot with its tooltip: (classes, tip).
fn dots(fig: &str) -> Vec<(&str, &str)> {
    let plot = fig.split(r#"<g class="plot">"#).nth(1).unwrap().split("</svg>").next().unwrap();
    plot.split(r#"<circle class=""#)
        .skip(1)
        .filter(|c| c.starts_with("pt "))
        .map(|c| (c.split('"').next().unwrap(), c.split("<title>").nth(1).map_or("", |t| t.split('<').next().unwrap())))
        .collect()
}

/// Each ring of `fig`: (the classes of its `<g>`, its label).
fn rings(fig: &str) -> Vec<(&str, &str)> {
    fig.split(r#"<g class="mark "#)
        .skip(1)
        .map(|g| (g.split('"').next().unwrap(), g.split("<title>").nth(1).unwrap().split('<').next().unwrap()))
        .collect()
}

/// A plan's frontier whose points of most throughput miss the SLO (the
/// per-dollar chart's highest point among them, as in a real plan, where
/// one was read as the cheapest choice): on both charts those points are
/// drawn hollow and their rings dashed (class `miss`), with a legend entry
/// saying what that means, and no point that meets the SLO is; the best
/// keeps its ring. The chart of a predicted frontier beside a measured one
/// draws them the same way.
#[test]
fn frontier_points_that_miss_the_slo_are_drawn_apart() {
    let mut doc = frontier_doc();
    // h100 tp2x1 bf16's point of most throughput, ringed on the frontier,
    // misses; the h200 priced apart, so there is a per-dollar chart too.
    let (tp2, h200) = (1, 2);
    assert_eq!(doc.configs[tp2].id, "h100 tp2x1 bf16");
    doc.configs[tp2].points[1].meets_slo = Some(false);
    doc.configs[h200].gpu_hour_usd = Some(3.2);
    goodput_core::doc::frontier::analyze_frontier(&mut doc);
    assert!(!doc.frontier_per_usd.is_empty());
    let best = doc.best.as_ref().unwrap().at;
    assert_eq!(doc.point(best).unwrap().meets_slo, Some(true));
    let html = frontier_page(&doc).unwrap();
    for id in ["frontier", "frontier-usd"] {
        let fig = figure(&html, id);
        let dots = dots(fig);
        let missed: Vec<_> = dots.iter().filter(|d| d.1.ends_with("misses the SLO")).collect();
        let met: Vec<_> = dots.iter().filter(|d| d.1.ends_with("meets the SLO")).collect();
        // h100 tp1x2 fp8 at 64 users, and h100 tp2x1 bf16 at 8.
        assert_eq!(missed.len(), 2, "{id}: {dots:?}");
        assert_eq!(met.len() + missed.len(), dots.len(), "{id}: every point is judged: {dots:?}");
        assert!(missed.iter().all(|d| d.0.split(' ').any(|c| c == "miss")), "{id}: {missed:?}");
        assert!(met.iter().all(|d| !d.0.split(' ').any(|c| c == "miss")), "{id}: {met:?}");
        let rings = rings(fig);
        let ring = |label: &str| rings.iter().find(|r| r.1 == label).unwrap_or_else(|| panic!("{id}: {rings:?}")).0;
        // In its GPU type's colour (one type here), the best's in ink.
        assert_eq!(ring("h100 tp2x1 bf16"), "mark-sat hue0 miss", "{id}");
        assert_eq!(ring("best: h100 tp1x2 fp8"), "mark-rec hue6", "{id}");
        assert!(rings.iter().filter(|r| r.1 != "h100 tp2x1 bf16").all(|r| !r.0.contains("miss")), "{id}: {rings:?}");
        let legend = fig.split(r#"<div class="legend">"#).nth(1).unwrap();
        assert!(legend.contains("misses the SLO</span>"), "{id}: {legend}");
        assert!(fig.contains("2 of the points miss the SLO: drawn hollow"), "{id}");
    }
    // Every ring here has room for its name: no row of the tables speaks of
    // a ring's number (each ringed row had been tagged "ring N").
    assert!(!html.contains(r#"<span class="tag">ring "#), "{html}");
    // With every point meeting it, nothing is hollow and the legend says nothing of it.
    let mut all_met = doc.clone();
    all_met.configs.iter_mut().flat_map(|c| &mut c.points).for_each(|p| p.meets_slo = Some(true));
    let html = frontier_page(&all_met).unwrap();
    assert!(!html.contains(" miss\"") && !html.contains("misses the SLO</span>"));
    // Predicted beside measured: the same hollow points.
    let mut pred = doc.clone();
    for (i, c) in pred.configs.iter_mut().enumerate() {
        c.params.insert("max_num_seqs".into(), (64u32 << i).to_string());
    }
    let mut meas = pred.clone();
    meas.source = goodput_core::doc::frontier::FrontierSource::Measured;
    goodput_core::doc::frontier::analyze_frontier(&mut meas);
    let c = goodput_core::doc::overlay::compare_frontiers(("plan.json", pred), ("frontier.json", meas));
    let html = overlay_page(&c).unwrap();
    let fig = figure(&html, "frontier-compare");
    let hollow = dots(fig).iter().filter(|d| d.0.split(' ').any(|c| c == "miss")).count();
    // Two a side.
    assert_eq!(hollow, 4, "{fig}");
    assert!(fig.contains("misses the SLO</span>") && fig.contains("A hollow point misses the SLO."), "{fig}");
}

/// The classes of `fig`'s legend swatch named `name` (its line's or dot's).
fn legend_swatch<'a>(fig: &'a str, name: &str) -> Option<&'a str> {
    let legend = fig.split(r#"<div class="legend">"#).nth(1)?.split("</div>").next()?;
    let entry = legend.split("<span").find(|e| e.ends_with(&format!("</svg>{name}</span>")))?;
    entry.split(r#"class=""#).nth(2)?.split('"').next()
}

/// A plan of two GPU types: each type's points and rings in its own colour
/// (the labels had all been one colour, whatever the GPU), the legend
/// naming each type once (not each configuration), the configurations off
/// the frontier faint beneath the others, the best's ring in ink. With one
/// type, the legend names it alone; a measured frontier, whose
/// configurations name no GPU type, gives each configuration a colour of its
/// own as before, its ring in its curve's colour.
#[test]
fn frontier_points_and_labels_take_their_gpu_types_colour() {
    let mut doc = frontier_doc();
    // Two H200 configurations: one on the frontier, one off it.
    doc.configs[1].id = "h200 tp2x1 bf16".into();
    for c in &mut doc.configs[1..=2] {
        c.gpu = Some("H200".into());
    }
    goodput_core::doc::frontier::analyze_frontier(&mut doc);
    let on: Vec<usize> = doc.frontier.iter().map(|p| p.config).collect();
    assert!(on.contains(&0) && on.contains(&1) && !on.contains(&2), "{:?}", doc.frontier);
    let html = frontier_page(&doc).unwrap();
    let fig = figure(&html, "frontier");
    assert_eq!(legend_swatch(fig, "H100 SXM"), Some("line c0"), "{fig}");
    assert_eq!(legend_swatch(fig, "H200"), Some("line c1"), "{fig}");
    assert_eq!(legend_swatch(fig, "off the frontier"), Some("pt c6 faint"), "{fig}");
    for c in &doc.configs {
        assert!(legend_swatch(fig, &c.id).is_none(), "the legend names {} where it names GPU types", c.id);
    }
    let drawn = dots(fig);
    assert_eq!(drawn.len(), 7, "{drawn:?}");
    for (classes, tip) in &drawn {
        let classes: Vec<&str> = classes.split(' ').collect();
        let (colour, faint) = match tip.split(" · ").next().unwrap() {
            "h100 tp1x2 fp8" => ("c0", false),
            "h200 tp2x1 bf16" => ("c1", false),
            "h200 tp1x2 bf16" => ("c1", true),
            other => panic!("a dot of {other}"),
        };
        assert!(classes.contains(&colour) && classes.contains(&"faint") == faint, "{tip}: {classes:?}");
    }
    // The faint points are drawn first, under the curves.
    let first_curve = fig.find(r#"<polyline class="line c"#).unwrap();
    assert!(fig.find(" faint").unwrap() < first_curve, "{fig}");
    let ringed = rings(fig);
    assert!(!ringed.is_empty());
    for (classes, label) in &ringed {
        let hue = match label.trim_start_matches("best: ") {
            _ if label.starts_with("best: ") => "hue6",
            l if l.starts_with("h100") => "hue0",
            _ => "hue1",
        };
        assert!(classes.split(' ').any(|c| c == hue), "{label}: {classes}");
    }
    assert!(ringed.iter().any(|r| r.1 == "h200 tp2x1 bf16"), "{ringed:?}");
    assert!(fig.contains("Colours are GPU types (H100 SXM, H200)"), "{fig}");

    // One GPU type: the legend names it, and only it.
    let mut one = doc.clone();
    one.configs.iter_mut().for_each(|c| c.gpu = Some("H100 SXM".into()));
    let html = frontier_page(&one).unwrap();
    let fig = figure(&html, "frontier");
    assert_eq!(legend_swatch(fig, "H100 SXM"), Some("line c0"));
    assert!(legend_swatch(fig, "H200").is_none());
    assert!(dots(fig).iter().all(|d| d.0.split(' ').any(|c| c == "c0")), "{fig}");

    // No GPU type named (a measured grid): a colour a configuration.
    let mut measured = doc.clone();
    measured.configs.iter_mut().for_each(|c| c.gpu = None);
    let html = frontier_page(&measured).unwrap();
    let fig = figure(&html, "frontier");
    for (i, c) in measured.configs.iter().take(3).enumerate() {
        assert_eq!(legend_swatch(fig, &c.id), Some(format!("line c{i}").as_str()), "{fig}");
    }
    let ringed = rings(fig);
    let h200 = ringed.iter().find(|r| r.1 == "h200 tp2x1 bf16").unwrap();
    assert!(h200.0.split(' ').any(|c| c == "hue1"), "{ringed:?}");
    assert!(!fig.contains("Colours are GPU types"), "{fig}");
}

/// The numbers a frontier chart writes by its rings (where a name has no
/// room), sorted, and the `ring N` tags of the table under `heading`.
fn ring_numbers(html: &str, chart: &str, heading: &str) -> (Vec<usize>, Vec<usize>) {
    let mut shown: Vec<usize> = figure(html, chart)
        .split(r#"<g class="mark "#)
        .skip(1)
        .filter_map(|g| g.split("</g>").next().unwrap().split("<text").nth(1))
        .filter_map(|t| t.split('>').nth(1).unwrap().split('<').next().unwrap().parse().ok())
        .collect();
    let table = html.split(&format!("<h2>{heading}</h2>")).nth(1).unwrap().split("</table>").next().unwrap();
    let mut tagged: Vec<usize> = table
        .split(r#"<span class="tag">ring "#)
        .skip(1)
        .map(|t| t.split('<').next().unwrap().parse().unwrap())
        .collect();
    shown.sort_unstable();
    tagged.sort_unstable();
    (shown, tagged)
}

/// Sixteen configurations of long ids, each one point on one straight
/// frontier: more rings than their names have room for. A table row is
/// tagged `ring N` where, and only where, the chart writes N by that
/// point's ring (every ringed row had been tagged, where the chart showed
/// names alone).
#[test]
fn frontier_tables_tag_only_the_rings_the_chart_numbers() {
    let mut doc = frontier_doc();
    let template = doc.configs[1].clone();
    doc.configs = (0..16)
        .map(|i| {
            let mut c = template.clone();
            c.id = format!("h200 tp{i}x1 pp2 fp8 mbt8192 pd3:1xTP4");
            c.gpu_hour_usd = Some(if i % 2 == 0 { 2.5 } else { 3.2 });
            let x = 10.0 + 5.0 * f64::from(i);
            let mut p = c.points[0].clone();
            p.tokens_per_s_per_user = Some(x);
            p.tpot_ms = Some(1000.0 / x);
            p.output_tokens_per_s_per_gpu = 1000.0 - 9.0 * x;
            p.output_tokens_per_s = 2.0 * p.output_tokens_per_s_per_gpu;
            p.goodput_tokens_per_s = Some(p.output_tokens_per_s);
            c.points = vec![p];
            c
        })
        .collect();
    goodput_core::doc::frontier::analyze_frontier(&mut doc);
    assert!(doc.frontier.len() >= 12, "{:?}", doc.frontier);
    let html = frontier_page(&doc).unwrap();
    let (shown, tagged) = ring_numbers(&html, "frontier", "The frontier");
    assert!(!shown.is_empty(), "the chart numbers some rings");
    assert_eq!(shown, tagged);
    if !doc.frontier_per_usd.is_empty() {
        let (shown, tagged) = ring_numbers(&html, "frontier-usd", "The per-dollar frontier");
        assert_eq!(shown, tagged);
    }
}
