//! The HTML report: one self-contained file per run, sweep or comparison.
//! Charts are inline SVG drawn in Rust, styles and a small checking script
//! inline, the document embedded as JSON; a Content-Security-Policy forbids
//! every fetch, so the page works offline and leaks nothing when opened.

mod compare;
mod frontier;
mod overlay;
mod run;
mod sections;
mod signals;
mod sweep;

pub use compare::compare_page;
pub use frontier::frontier_page;
pub use overlay::overlay_page;
pub use run::{run_page, run_page_with};
pub use sweep::{sweep_page, sweep_page_with};

use super::{ExportError, Exporter, Rendered};
use crate::compare::Comparison;
use crate::escape::{html, script_json};
use crate::format;
use crate::series::{self, Latency};
use crate::svg::{Chart, Guide, Series, Style};
use crate::table::{Cell, Table};
use goodput_core::analysis::ratings::{Band, Rated};
use goodput_core::analysis::slo::SloMetric;
use goodput_core::doc::sweep::SweepResult;
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

/// What the page's embedded document leaves out of the one it shows, to
/// stay within [`EMBED_LIMIT_BYTES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Embedded {
    Whole,
    /// The per-request records.
    WithoutRecords,
    /// The records and the server's scrapes (`server_signals.samples`); the
    /// signals' window summary and the charts drawn from them stay.
    WithoutRecordsOrScrapes,
}

impl Embedded {
    /// The page's note on what the embedded document leaves out, if anything.
    fn note(self) -> Option<String> {
        let what = match self {
            Embedded::Whole => return None,
            Embedded::WithoutRecords => "per-request records",
            Embedded::WithoutRecordsOrScrapes => {
                "per-request records and the server's scrapes, server_signals.samples,"
            }
        };
        Some(format!(
            r#"<p class="note">The embedded document leaves out {what} (over {} MiB); the JSON result holds them.</p>"#,
            EMBED_LIMIT_BYTES >> 20
        ))
    }
}

/// The document as JSON for the page; when it would be too large, `lean`'s
/// instead (the document without its per-request records), and when that
/// too would be, `leaner`'s of it (without the server's scrapes as well).
fn embed<T: Serialize, L: Serialize, M: Serialize>(
    doc: &T,
    lean: impl FnOnce() -> L,
    leaner: impl FnOnce(L) -> M,
) -> Result<(String, Embedded), ExportError> {
    embed_within(doc, EMBED_LIMIT_BYTES, lean, leaner)
}

fn embed_within<T: Serialize, L: Serialize, M: Serialize>(
    doc: &T,
    limit: usize,
    lean: impl FnOnce() -> L,
    leaner: impl FnOnce(L) -> M,
) -> Result<(String, Embedded), ExportError> {
    // Written once, up to the limit: a long run's records, or its scrapes,
    // can run to hundreds of MB, and are never held whole (the whole case,
    // every page under the limit, had been written twice: measured, then
    // written).
    if let Some(text) = json_within(doc, limit)? {
        return Ok((text, Embedded::Whole));
    }
    // The document without its records, never a tree of them. It goes
    // through a `Value`, as the page has always embedded a stripped
    // document: its maps order their keys by name.
    let lean = lean();
    if serialized_len(&lean)? <= limit {
        let v = serde_json::to_value(&lean)?;
        return Ok((serde_json::to_string(&v)?, Embedded::WithoutRecords));
    }
    // Embedded whatever its size now: what is left is the run's summary,
    // configuration and the signals' window, small beside what was cut.
    let v = serde_json::to_value(leaner(lean))?;
    Ok((serde_json::to_string(&v)?, Embedded::WithoutRecordsOrScrapes))
}

/// `doc` as JSON where it takes at most `limit` bytes; None where it takes
/// more, written no further than the limit.
fn json_within<T: Serialize>(doc: &T, limit: usize) -> Result<Option<String>, ExportError> {
    let mut out = Capped { bytes: Vec::new(), limit, over: false };
    match serde_json::to_writer(&mut out, doc) {
        Ok(()) => Ok(Some(String::from_utf8(out.bytes).expect("serde_json writes UTF-8"))),
        Err(_) if out.over => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A buffer that refuses to grow past `limit` bytes, saying so in `over`.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + buf.len() > self.limit {
            self.over = true;
            return Err(std::io::Error::other("past the embedding limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn serialized_len<T: Serialize>(doc: &T) -> Result<usize, ExportError> {
    let mut size = ByteCount(0);
    serde_json::to_writer(&mut size, doc)?;
    Ok(size.0)
}

/// `r` without the server's scrapes, for the embedded document.
fn without_scrapes(mut r: RunResult) -> RunResult {
    if let Some(s) = r.server_signals.as_mut() {
        s.samples = Vec::new();
    }
    r
}

/// `r` without its per-request records, for the embedded document: the
/// rest is cloned (its summary, configuration and signals, small beside
/// the records). Every field is named, so a field added to [`RunResult`]
/// must be placed here.
fn without_records(r: &RunResult) -> RunResult {
    let RunResult {
        schema,
        tool,
        kind,
        started_unix_s,
        run_id,
        interrupted,
        stop,
        config,
        target,
        window,
        summary,
        slo,
        cost,
        energy,
        compat,
        engine,
        server_signals,
        client,
        client_stalls,
        warnings,
        diagnosis,
        shard,
        merge,
        repeats,
        requests: _,
    } = r;
    RunResult {
        schema: schema.clone(),
        tool: tool.clone(),
        kind: kind.clone(),
        started_unix_s: *started_unix_s,
        run_id: run_id.clone(),
        interrupted: *interrupted,
        stop: stop.clone(),
        config: config.clone(),
        target: target.clone(),
        window: *window,
        summary: summary.clone(),
        slo: slo.clone(),
        cost: cost.clone(),
        energy: energy.clone(),
        compat: compat.clone(),
        engine: engine.clone(),
        server_signals: server_signals.clone(),
        client: client.clone(),
        client_stalls: client_stalls.clone(),
        warnings: warnings.clone(),
        diagnosis: diagnosis.clone(),
        shard: shard.clone(),
        merge: merge.clone(),
        repeats: repeats.clone(),
        requests: None,
    }
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
        g.push(Guide { at: l.max.as_secs_f64() * 1e3, label: format!("limit {l}"), ..Default::default() });
    }
    for ob in slo.objectives.iter().filter(|o| o.metric == sm) {
        g.push(Guide { at: ob.max.as_secs_f64() * 1e3, label: format!("objective {ob}"), ..Default::default() });
    }
    g
}

fn header(o: &mut String, brand: &str, title: &str, lines: &[String]) {
    let _ = write!(o, r#"<header><div class="brand">goodput · {}</div><h1>{}</h1>"#, html(brand), html(title));
    for l in lines {
        let _ = write!(o, r#"<p class="meta">{l}</p>"#);
    }
}

/// `n` of `noun`, the noun plural unless there is one: `1 GPU`, `4 GPUs`.
fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A run's or sweep's title: its `--label` and its model, `label · model`;
/// a blank label is left out with its separator, and a blank model name
/// leaves the label alone.
fn title_of(label: Option<&str>, model: &str) -> String {
    match label.filter(|l| !l.trim().is_empty()) {
        Some(l) if !model.trim().is_empty() => format!("{l} · {model}"),
        Some(l) => l.to_string(),
        None => model.to_string(),
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

/// What a CDF drawn through a summary's percentiles says of itself.
const FROM_PERCENTILES: &str = "Drawn from the summary's percentiles (min, pNN, max): the run was saved without \
     per-request records (--include-requests).";

fn cdf_chart(id: &str, m: Latency, runs: &[(String, &RunResult)], guides: Vec<Guide>) -> Chart {
    let curves = runs.iter().map(|(label, r)| (label.clone(), series::cdf(r, m))).collect();
    cdf_chart_of(id, m, curves, guides, FROM_PERCENTILES)
}

/// A tail that reaches this many times further than the body's end (p99.9)
/// is cut off the axis: one 2.7 s stall among 20 ms gaps would otherwise
/// squeeze every other sample into the chart's left edge.
const TAIL_CUT: f64 = 2.0;

/// The CDF chart of `curves` (labelled, one per run or load); `approx`,
/// the note for curves drawn through percentiles. The x axis stops at the
/// body's end (or the furthest guide) when the tail runs far past it, and
/// the note says so.
fn cdf_chart_of(id: &str, m: Latency, curves: Vec<(String, series::Cdf)>, guides: Vec<Guide>, approx: &str) -> Chart {
    let n = curves.len();
    let from_percentiles = curves.iter().any(|(_, c)| c.from_percentiles);
    let max = curves
        .iter()
        .flat_map(|(_, c)| c.points.iter().map(|p| p.0))
        .filter(|x| x.is_finite())
        .fold(f64::NAN, f64::max);
    let body = curves.iter().filter_map(|(_, c)| c.body_end).max_by(|a, b| a.1.total_cmp(&b.1));
    let reach = guides.iter().filter(|g| !g.horizontal).map(|g| g.at).fold(f64::NAN, f64::max);
    let cut = body.filter(|&(_, x)| x > 0.0 && max > TAIL_CUT * x.max(reach).max(0.0)).map(|(p, x)| {
        if reach > x {
            (reach, format!("{} ms", format::ms(Some(reach))))
        } else {
            (x, format!("p{p} ({} ms)", format::ms(Some(x))))
        }
    });
    let mut series = Vec::new();
    for (i, (label, cdf)) in curves.into_iter().enumerate() {
        let style = if cdf.from_percentiles { Style::LineDots } else { Style::Line };
        let name =
            if n == 1 { format!("{} ({})", m.id().to_uppercase(), counted(cdf.samples, "sample")) } else { label };
        let mut points = cdf.points;
        if let Some((at, _)) = &cut {
            points.retain(|p| p.0 <= *at);
            // A thinned CDF's last quantile inside the axis can fall short
            // of the body's end: the line runs on to it.
            if let Some((p, x)) = cdf.body_end.filter(|b| b.1 <= *at && points.last().is_some_and(|l| l.0 < b.1)) {
                points.push((x, p / 100.0));
            }
        }
        series.push(Series::new(name, style, i, points));
    }
    let mut notes: Vec<String> = Vec::new();
    if from_percentiles {
        notes.push(approx.to_string());
    }
    if let Some((_, what)) = &cut {
        notes.push(format!(
            "The x axis stops at {what} so that the body shows: the slowest samples, up to {} ms, lie beyond it.",
            format::ms(Some(max))
        ));
    }
    Chart {
        id: id.into(),
        title: format!("{} ({}), CDF", m.title(), m.id().to_uppercase()),
        x_label: format!("{} (ms)", m.id().to_uppercase()),
        y_label: "share of samples ≤ x".into(),
        series,
        guides,
        y_share: true,
        note: (!notes.is_empty()).then(|| notes.join(" ")),
        ..Default::default()
    }
}

/// A table in a box that scrolls sideways, of the CSS class `class`: the
/// title, heads, labels and values escaped; the stylesheet aligns the
/// numbers right and the first column left, as the table's alignment says.
/// A row's marks are tags beside its label, a verdict is coloured, and a
/// row's note is a line of its own under it.
fn table(o: &mut String, t: &Table, class: Option<&str>) {
    let class = class.map(|c| format!(r#" class="{}""#, html(c))).unwrap_or_default();
    let _ = write!(o, r#"<div class="scroll"><table{class}><thead><tr><th>{}</th>"#, html(&t.title));
    for c in &t.columns {
        let _ = write!(o, "<th>{}</th>", html(&c.head));
    }
    o.push_str("</tr></thead><tbody>");
    for row in &t.rows {
        let _ = write!(o, "<tr><td>{}", html(&row.label));
        for m in &row.marks {
            let _ = write!(o, r#" <span class="tag info">{}</span>"#, m.word());
        }
        o.push_str("</td>");
        for (cell, text) in row.cells.iter().zip(t.texts(row)) {
            let text = html(&text);
            let _ = match cell {
                Cell::Verdict { pass: Some(true), .. } => write!(o, r#"<td><span class="better">{text}</span></td>"#),
                Cell::Verdict { pass: Some(false), .. } => write!(o, r#"<td><span class="worse">{text}</span></td>"#),
                _ => write!(o, "<td>{text}</td>"),
            };
        }
        o.push_str("</tr>");
        if let Some(note) = &row.note {
            let _ = write!(
                o,
                r#"<tr class="why"><td colspan="{}" class="text">{}</td></tr>"#,
                1 + t.columns.len(),
                html(note)
            );
        }
    }
    o.push_str("</tbody></table></div>");
}

fn charts(o: &mut String, charts: &[Chart]) {
    o.push_str(r#"<div class="charts">"#);
    for c in charts {
        o.push_str(&c.render());
    }
    o.push_str("</div>");
}

fn config_section(o: &mut String, config: &serde_json::Value, embedded: Embedded) -> Result<(), ExportError> {
    let _ = write!(
        o,
        r#"<section><h2>Configuration</h2><pre class="config">{}</pre>{}</section>"#,
        html(&serde_json::to_string_pretty(config)?),
        embedded.note().unwrap_or_default()
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

/// The page's styles, inlined in `<style>`.
const CSS: &str = concat!("\n", include_str!("report.css"));

/// Checks, once the page is laid out, that every chart drew what it was
/// given and that the embedded document parses; the verdict goes on
/// `<body>` (`data-render-ok` or `data-render-error`) where a headless
/// browser's `--dump-dom` shows it.
const JS: &str = concat!("\n", include_str!("report.js"));

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use goodput_core::analysis::assemble::{assemble, Assembly};
    use goodput_core::doc::record::{Channel, FailureKind, OutputChunk};
    use goodput_core::{AnalysisOptions, Outcome, RequestRecord, Target, Tool};
    use std::time::Duration;

    /// `n` streamed requests, four at a time, every seventh failing with
    /// one of two messages; and the run of them, its records kept when
    /// `include_requests`.
    pub(in crate::export::html) fn run(n: u64, include_requests: bool) -> (RunResult, Vec<RequestRecord>) {
        let ms = |v: u64| Duration::from_millis(v);
        let recs: Vec<RequestRecord> = (0..n)
            .map(|id| {
                let sent = ms(id / 4 * 400 + id % 4);
                let mut r = RequestRecord::new(id, sent, sent);
                for k in 0..16 {
                    let t = sent + ms(40 + id % 5 + k * (5 + (id + k) % 3));
                    r.chunks.push(OutputChunk { t, tokens: 1, channel: Channel::Content });
                }
                r.end = r.chunks.last().unwrap().t + ms(1);
                r.input_tokens = 128;
                r.output_tokens = 16;
                r.outcome = if id % 7 == 6 {
                    let message = if id % 2 == 0 { "upstream overloaded" } else { "reset" };
                    Outcome::Failed { kind: FailureKind::MidStreamError, message: message.into() }
                } else {
                    Outcome::Success
                };
                r
            })
            .collect();
        let a = Assembly {
            tool: Tool { name: "goodput".into(), version: "0.1.0".into(), commit: None },
            kind: "bench",
            run_id: String::new(),
            started_unix_s: 1_767_225_600.0,
            interrupted: false,
            config: Default::default(),
            target: Target {
                url: "http://127.0.0.1:8000".into(),
                model: "m".into(),
                api: "chat".into(),
                ..Default::default()
            },
            include_requests,
        };
        let opts = AnalysisOptions { slo: Some("ttft:p95<=100ms".parse().unwrap()), ..Default::default() };
        (assemble(a, &recs, &opts), recs)
    }

    /// The stripped document as the page embedded it before `embed` built
    /// it without the records: the whole document as a `Value`, its
    /// `requests` removed.
    fn stripped_as_before<T: Serialize>(doc: &T, strip: impl FnOnce(&mut serde_json::Value)) -> String {
        let mut v = serde_json::to_value(doc).unwrap();
        strip(&mut v);
        serde_json::to_string(&v).unwrap()
    }

    /// One of a thing is not written as several: `1 GPU`, `TTFT (1 sample)`.
    #[test]
    fn counts_of_one_are_singular() {
        assert_eq!(
            (counted(1, "GPU"), counted(4, "GPU"), counted(0, "point")),
            ("1 GPU".into(), "4 GPUs".into(), "0 points".into())
        );
        let (r, _) = run(1, true);
        let chart = cdf_chart("t", Latency::Ttft, &[("r".into(), &r)], Vec::new());
        assert_eq!(chart.series[0].name, "TTFT (1 sample)");
    }

    #[test]
    fn an_oversized_document_is_embedded_without_its_records() {
        let (r, _) = run(40, true);
        let whole = serde_json::to_string(&r).unwrap();
        let embed = |limit| embed_within(&r, limit, || without_records(&r), without_scrapes).unwrap();
        let (small, embedded) = embed(whole.len());
        assert_eq!(embedded, Embedded::Whole);
        assert_eq!(small, whole);
        let (text, embedded) = embed(whole.len() - 1);
        assert!(embedded == Embedded::WithoutRecords && !text.contains(r#""requests":["#), "{text}");
        let before = stripped_as_before(&r, |v| {
            v.as_object_mut().unwrap().remove("requests").unwrap();
        });
        assert_eq!(text, before);
        // Only the records are left out.
        let mut back: RunResult = serde_json::from_str(&text).unwrap();
        back.requests = r.requests.clone();
        assert_eq!(back, r);
    }

    /// A run whose scrapes alone pass the limit is embedded without them
    /// too, the rest of its signals kept, and the page says so.
    #[test]
    fn a_run_too_large_without_its_records_is_embedded_without_its_scrapes() {
        use goodput_core::prometheus::scrape::{GaugeSignal, ScrapeSample, ServerSignals, Signals};
        let (mut r, _) = run(40, true);
        let samples: Vec<ScrapeSample> = (0..200)
            .map(|k| {
                let mut signals = Signals::default();
                signals.gauges.insert(GaugeSignal::RunningRequests, k as f64);
                ScrapeSample { t: Duration::from_millis(100 * k), signals }
            })
            .collect();
        r.server_signals =
            Some(ServerSignals { scrapes: samples.len(), interval_s: 0.1, samples, ..Default::default() });
        let lean = serde_json::to_string(&without_records(&r)).unwrap();
        let embed = |limit| embed_within(&r, limit, || without_records(&r), without_scrapes).unwrap();
        assert_eq!(embed(lean.len()).1, Embedded::WithoutRecords);
        let (text, embedded) = embed(lean.len() - 1);
        assert_eq!(embedded, Embedded::WithoutRecordsOrScrapes);
        assert!(text.len() < lean.len() / 2, "{} of {}", text.len(), lean.len());
        let back: RunResult = serde_json::from_str(&text).unwrap();
        let (got, want) = (back.server_signals.unwrap(), r.server_signals.as_ref().unwrap());
        assert!(got.samples.is_empty() && back.requests.is_none());
        assert_eq!(ServerSignals { samples: want.samples.clone(), ..got }, *want);
        assert_eq!(back.summary, r.summary);
        let note = embedded.note().unwrap();
        assert!(
            note.contains(
                "leaves out per-request records and the server's scrapes, server_signals.samples, (over 16 MiB)"
            ),
            "{note}"
        );
        assert_eq!(Embedded::Whole.note(), None);
    }

    #[test]
    fn a_run_without_records_is_the_run_less_them() {
        let (with, _) = run(12, true);
        let (without, _) = run(12, false);
        assert!(with.requests.is_some());
        assert_eq!(without_records(&with), without);
    }
}
