//! What the HTML charts show, read back from the SVG's own coordinates: time
//! axes that end near the data, and a CDF cut at p99.9 when one outlier
//! would squeeze it.

mod common;

use common::*;
use goodput_core::RunResult;
use goodput_report::export::html::run_page;
use goodput_report::format;
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
    let mut chunks: Vec<goodput_core::record::OutputChunk> = r.chunks.iter().collect();
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
