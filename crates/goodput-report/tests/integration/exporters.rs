//! Every exporter on real result documents: what each format holds, that
//! the HTML is self-contained, and that hostile strings from a document stay
//! text in HTML, Markdown, CSV and the terminal.

/// The charts, read back from their SVG coordinates.
mod charts;
use crate::common;

use common::*;
use goodput_core::RunResult;
use goodput_report::read::{read_document, Document};
use goodput_report::{compare, escape, export_run, parse_rules, terminal, Format, Rendered};

fn text(r: &Rendered, name: &str) -> String {
    String::from_utf8(r.file(name).unwrap_or_else(|| panic!("no {name}")).to_vec()).unwrap()
}

fn render_run(f: Format, r: &RunResult) -> Rendered {
    f.exporter().render_run(r).unwrap()
}

/// A strict RFC 4180 reader: fields, quotes, doubled quotes, line breaks
/// inside quotes. Panics on anything malformed, which is the point.
fn parse_csv(s: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let (mut row, mut field) = (Vec::new(), String::new());
    let mut chars = s.chars().peekable();
    let mut at_start = true;
    while let Some(c) = chars.next() {
        match c {
            '"' if at_start => {
                loop {
                    match chars.next().expect("unterminated quoted field") {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        '"' => break,
                        c => field.push(c),
                    }
                }
                assert!(matches!(chars.peek(), Some(',') | Some('\n') | None), "text after a closing quote");
                at_start = false;
            }
            '"' => panic!("a quote inside an unquoted field: {field}"),
            ',' => {
                row.push(std::mem::take(&mut field));
                at_start = true;
            }
            '\n' => {
                row.push(std::mem::take(&mut field));
                rows.push(std::mem::take(&mut row));
                at_start = true;
            }
            '\r' => panic!("bare CR outside quotes"),
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    assert!(field.is_empty() && row.is_empty(), "the file must end with a newline");
    rows
}

fn column<'a>(rows: &'a [Vec<String>], name: &str) -> Vec<&'a str> {
    let i = rows[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    rows[1..].iter().map(|r| r[i].as_str()).collect()
}

/// No cell a spreadsheet would evaluate: nothing starts with = + @ (or -,
/// unless it is a number we wrote).
fn assert_no_formulas(rows: &[Vec<String>]) {
    for row in rows {
        for cell in row {
            let risky = cell.starts_with(['=', '+', '@', '\t', '\r'])
                || (cell.starts_with('-') && cell.parse::<f64>().is_err());
            assert!(!risky, "formula-like cell {cell:?}");
        }
    }
}

#[test]
fn csv_run_summary_is_one_wide_row_with_units_in_the_names() {
    let r = run();
    let out = render_run(Format::Csv, &r);
    let Rendered::Folder(files) = &out else { panic!("CSV renders a folder") };
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["summary.csv", "requests.csv"]);
    let rows = parse_csv(&text(&out, "summary.csv"));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].len(), rows[1].len());
    let get = |name: &str| column(&rows, name)[0].to_string();
    let s = &r.summary;
    assert_eq!(get("ttft_ms_p50").parse::<f64>().unwrap(), s.ttft_ms.p(50.0).unwrap());
    assert_eq!(get("e2e_ms_p99").parse::<f64>().unwrap(), s.e2e_ms.p(99.0).unwrap());
    assert_eq!(get("itl_count"), s.itl_ms.count.to_string());
    assert_eq!(get("output_tokens_per_s").parse::<f64>().unwrap(), s.throughput.output_tokens_per_s);
    assert_eq!(get("slo_attainment").parse::<f64>().unwrap(), s.goodput.as_ref().unwrap().slo_attainment);
    assert_eq!(get("model"), "llama-3.1-8b");
    assert_eq!(get("slo"), SLO);
    assert_eq!(get("failed_mid_stream_error"), "0");
    insta::assert_snapshot!("summary_csv_columns", rows[0].join("\n"));
}

#[test]
fn csv_requests_have_one_row_per_record_and_exact_milliseconds() {
    let r = run();
    let rows = parse_csv(&text(&render_run(Format::Csv, &r), "requests.csv"));
    let recs = r.requests.as_ref().unwrap();
    assert_eq!(rows.len(), recs.len() + 1);
    assert!(rows.iter().all(|row| row.len() == rows[0].len()));
    let want = [
        "id",
        "warmup",
        "scheduled_ms",
        "sent_ms",
        "client_queue_ms",
        "ttfb_ms",
        "ttft_ms",
        "ttft_content_ms",
        "e2e_ms",
        "tpot_ms",
        "itl_max_ms",
        "chunks",
        "input_tokens",
        "output_tokens",
        "input_tokens_source",
        "output_tokens_source",
        "chunk_tokens_source",
        "bound_chunks",
        "ttft_bound",
        "client_stalled",
        "http_status",
        "finish_reason",
        "outcome",
        "failure_kind",
        "message",
    ];
    assert_eq!(rows[0], want);
    // Milliseconds from integer nanoseconds: at most six decimals, no float dust.
    for cell in column(&rows, "ttft_ms").into_iter().chain(column(&rows, "sent_ms")) {
        let decimals = cell.split_once('.').map_or(0, |(_, d)| d.len());
        assert!(decimals <= 6, "{cell}");
    }
    let ttft: f64 = column(&rows, "ttft_ms")[3].parse().unwrap();
    let rec = &recs[3];
    assert_eq!(ttft, (rec.chunks.at(0).t - rec.sent).as_nanos() as f64 / 1e6);
    assert_eq!(column(&rows, "outcome")[0], "success");
}

#[test]
fn csv_neutralises_hostile_text_and_quotes_it_correctly() {
    let r = adversarial_run();
    let out = render_run(Format::Csv, &r);
    for name in ["summary.csv", "requests.csv"] {
        let rows = parse_csv(&text(&out, name));
        assert!(rows.iter().all(|row| row.len() == rows[0].len()), "{name}: ragged rows");
        assert_no_formulas(&rows);
    }
    let rows = parse_csv(&text(&out, "requests.csv"));
    let messages: Vec<&str> = column(&rows, "message").into_iter().filter(|m| !m.is_empty()).collect();
    assert_eq!(messages.len(), 12);
    // Read back, each message is the original text; the one a spreadsheet
    // would run gains a leading apostrophe.
    let bare = format!("'{BARE_FORMULA}");
    assert!(messages.contains(&FORMULA_MESSAGE));
    assert!(messages.contains(&bare.as_str()));
    // Line breaks survive quoting; an escape sequence is shown, not kept
    // raw for a terminal that `cat`s the file to run.
    let shown = PWN_MESSAGE.replace('\x1b', "\\u{1b}");
    assert!(messages.contains(&shown.as_str()), "{messages:?}");
    assert!(!text(&out, "requests.csv").contains('\x1b'));
    assert_eq!(column(&rows, "finish_reason")[0], "'=HYPERLINK(\"http://evil.example\",\"x\")");
    assert_eq!(column(&rows, "failure_kind").iter().filter(|k| **k == "mid_stream_error").count(), 12);
    let summary = parse_csv(&text(&out, "summary.csv"));
    assert_eq!(column(&summary, "model")[0], XSS_MODEL);
    assert_eq!(column(&summary, "failed_mid_stream_error")[0], "12");
    assert_eq!(column(&summary, "error_rate")[0], "0.2");
}

#[test]
fn csv_sweep_points_share_one_header_and_mark_the_analysis() {
    let sw = sweep();
    let out = Format::Csv.exporter().render_sweep(&sw).unwrap();
    let rows = parse_csv(&text(&out, "points.csv"));
    assert_eq!(rows.len(), sw.points.len() + 1);
    assert!(rows.iter().all(|row| row.len() == rows[0].len()));
    assert_eq!(
        &rows[0][..8],
        ["point", "load_kind", "load_value", "origin", "meets_slo", "steady", "saturation", "recommended"]
    );
    assert_eq!(column(&rows, "load_value"), ["1", "2", "4", "8", "16", "32"]);
    let rec = sw.analysis.recommended.as_ref().unwrap().index;
    let flags = column(&rows, "recommended");
    assert_eq!(flags.iter().filter(|f| **f == "true").count(), 1);
    assert_eq!(flags[rec], "true");
    assert_eq!(column(&rows, "meets_slo")[5], "false");
    let reqs = parse_csv(&text(&out, "requests.csv"));
    assert_eq!(reqs[0][0], "point");
    let with_records: usize = sw.points.iter().filter_map(|p| p.result.requests.as_ref()).map(Vec::len).sum();
    assert_eq!(reqs.len(), with_records + 1);
}

fn strip_block(html: &str, open: &str, close: &str) -> (String, Vec<String>) {
    let mut rest = html;
    let mut out = String::new();
    let mut bodies = Vec::new();
    while let Some(i) = rest.find(open) {
        let tag_end = i + rest[i..].find('>').unwrap() + 1;
        out.push_str(&rest[..tag_end]);
        let end = tag_end + rest[tag_end..].find(close).expect("unclosed block");
        bodies.push(rest[tag_end..end].to_string());
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, bodies)
}

/// Every tag of the page, as (name, [(attribute, value)]), script and style
/// bodies skipped. Raw `<` only ever opens one of our tags: untrusted text
/// is escaped.
fn tags(html: &str) -> Vec<(String, Vec<(String, String)>)> {
    let (html, _) = strip_block(html, "<script", "</script>");
    let (html, _) = strip_block(&html, "<style", "</style>");
    let mut out = Vec::new();
    let mut rest = html.as_str();
    while let Some(i) = rest.find('<') {
        let end = i + rest[i..].find('>').expect("unclosed tag");
        let inner = &rest[i + 1..end];
        rest = &rest[end + 1..];
        if inner.starts_with('/') || inner.starts_with('!') {
            continue;
        }
        let name: String = inner.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        let mut attrs = Vec::new();
        let mut a = inner[name.len()..].trim_start();
        while !a.is_empty() && a != "/" {
            let key: String = a.chars().take_while(|c| !c.is_whitespace() && *c != '=' && *c != '/').collect();
            assert!(!key.is_empty(), "cannot read attributes of <{inner}>");
            a = &a[key.len()..];
            let mut value = String::new();
            if let Some(v) = a.strip_prefix("=\"") {
                let close = v.find('"').expect("unterminated attribute");
                value = v[..close].to_string();
                a = &v[close + 1..];
            } else {
                assert!(!a.starts_with('='), "unquoted attribute in <{inner}>");
            }
            attrs.push((key.to_lowercase(), value));
            a = a.trim_start();
        }
        out.push((name.to_lowercase(), attrs));
    }
    out
}

const ALLOWED_TAGS: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "header",
    "main",
    "section",
    "footer",
    "div",
    "span",
    "h1",
    "h2",
    "p",
    "b",
    "i",
    "small",
    "code",
    "ul",
    "li",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "figure",
    "figcaption",
    "svg",
    "g",
    "line",
    "polyline",
    "circle",
    "rect",
    "text",
    "script",
];

fn assert_self_contained(html: &str) {
    let tags = tags(html);
    for (name, attrs) in &tags {
        assert!(ALLOWED_TAGS.contains(&name.as_str()), "unexpected <{name}>");
        for (k, v) in attrs {
            assert!(!k.starts_with("on"), "event handler {k} on <{name}>");
            assert!(
                ![
                    "src",
                    "href",
                    "xlink:href",
                    "srcset",
                    "action",
                    "formaction",
                    "background",
                    "poster",
                    "style",
                    "xmlns"
                ]
                .contains(&k.as_str()),
                "<{name} {k}=\"{v}\">: a fetch or an inline style"
            );
            assert!(!v.contains("//"), "<{name} {k}=\"{v}\"> holds a URL");
        }
    }
    let scripts: Vec<_> = tags.iter().filter(|(n, _)| n == "script").collect();
    assert_eq!(scripts.len(), 2, "the data block and the checking script, nothing else");
    assert_eq!(scripts[0].1, [("type".into(), "application/json".into()), ("id".into(), "goodput-data".into())]);
    assert!(scripts[1].1.is_empty());
    let (_, styles) = strip_block(html, "<style", "</style>");
    for css in styles {
        assert!(!css.contains("url(") && !css.contains("@import") && !css.contains("//"), "the stylesheet fetches");
    }
    let (_, code) = strip_block(html, "<script", "</script>");
    // code[0] is the data block, checked by `embedded`.
    for js in &code[1..] {
        for bad in ["fetch(", "XMLHttpRequest", "import(", "http", "//", "eval(", "innerHTML"] {
            assert!(!js.contains(bad), "script holds {bad}");
        }
    }
    assert!(!html.contains("https://"), "an https URL in the page");
    assert!(html.contains("Content-Security-Policy") && html.contains("default-src 'none'"));
}

/// The embedded document, read back.
fn embedded(html: &str) -> serde_json::Value {
    let start = html.find(r#"<script type="application/json" id="goodput-data">"#).unwrap();
    let (_, bodies) = strip_block(&html[start..], "<script", "</script>");
    assert!(!bodies[0].contains('<') && !bodies[0].contains('>'), "raw < or > in the data block");
    serde_json::from_str(&bodies[0]).unwrap()
}

fn chart_points(html: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (name, attrs) in tags(html) {
        if name == "figure" {
            let get = |k: &str| attrs.iter().find(|(a, _)| a == k).map(|(_, v)| v.clone()).unwrap();
            out.push((get("data-chart"), get("data-points").parse().unwrap()));
        }
    }
    out
}

#[test]
fn html_run_is_self_contained_with_every_chart_drawn() {
    let r = run();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    let charts = chart_points(&html);
    let ids: Vec<&str> = charts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["ttft-cdf", "tpot-cdf", "itl-cdf", "e2e-cdf", "throughput-time", "inflight-time", "ttft-time"]);
    for (id, n) in &charts {
        assert!(*n > 0, "{id} has no points");
    }
    // The TTFT CDF steps through each of the 60 requests: two vertices each.
    assert_eq!(charts[0].1, 2 * r.summary.ttft_ms.count as usize);
    // SLO limits are drawn on the TTFT charts.
    assert!(html.contains("limit ttft&lt;=60ms") && html.contains("objective ttft:p95&lt;=70ms"));
    let back: RunResult = serde_json::from_value(embedded(&html)).unwrap();
    assert_eq!(back, r, "the embedded document is the run, exactly");
}

#[test]
fn html_without_records_draws_cdfs_from_the_percentiles() {
    let r = run_without_requests();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    let charts = chart_points(&html);
    assert_eq!(charts.len(), 4, "no time series without records");
    for (id, n) in &charts {
        // min, p50, p90, p95, p99, max
        assert_eq!(*n, 6, "{id}");
    }
    assert!(html.contains("Drawn from the summary"));
    assert!(html.contains("No time series"));
}

#[test]
fn html_keeps_every_hostile_string_as_text() {
    let r = adversarial_run();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the model name shows as text");
    assert!(!html.contains("<script>alert"));
    assert!(!html.contains("<b>x</b>") && html.contains("&lt;b&gt;x&lt;/b&gt;"));
    assert!(!html.contains("<img") && !html.contains("<!--"));
    assert!(
        html.contains("&quot;=cmd|&#39; /C calc&#39;!A0&quot;, &lt;b&gt;x&lt;/b&gt;"),
        "the message shows, escaped"
    );
    let back: RunResult = serde_json::from_value(embedded(&html)).unwrap();
    assert_eq!(back.target.model, XSS_MODEL);
    assert_eq!(back, r);
}

/// A search adds points between the grid's: the curves still run from the
/// lightest load to the heaviest, whatever order the points ran in.
#[test]
fn html_sweep_curves_join_points_in_load_order_not_run_order() {
    let mut sw = sweep();
    sw.points.reverse();
    let html = text(&Format::Html.exporter().render_sweep(&sw).unwrap(), "");
    let start = html.find(r#"data-chart="sweep-ttft""#).unwrap();
    let line = &html[start..];
    let points = line.split(r#"<polyline class="line"#).nth(1).unwrap();
    let points = points.split(r#"points=""#).nth(1).unwrap().split('"').next().unwrap();
    let xs: Vec<f64> = points.split(' ').map(|p| p.split(',').next().unwrap().parse().unwrap()).collect();
    // The throughputs in load order (requests in flight), up and down as
    // they go (the fixture's last load is past the knee): the line's x
    // coordinates rise and fall with them.
    let mut by_load: Vec<_> = sw.points.iter().map(|p| &p.result.summary).collect();
    by_load.sort_by(|a, b| a.in_flight.mean.total_cmp(&b.in_flight.mean));
    let tput: Vec<f64> = by_load.iter().map(|s| s.throughput.output_tokens_per_s).collect();
    assert_eq!(xs.len(), tput.len());
    let rises = |v: &[f64]| v.windows(2).map(|w| w[1] > w[0]).collect::<Vec<_>>();
    assert_eq!(rises(&xs), rises(&tput), "x {xs:?} against throughput by load {tput:?}");
    assert!(rises(&tput).contains(&true) && rises(&tput).contains(&false), "the fixture goes up, then down");
}

#[test]
fn html_sweep_marks_saturation_and_the_recommended_point() {
    let sw = sweep();
    let html = text(&Format::Html.exporter().render_sweep(&sw).unwrap(), "");
    assert_self_contained(&html);
    let charts = chart_points(&html);
    let ids: Vec<&str> = charts.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["sweep-ttft", "sweep-e2e", "sweep-goodput", "sweep-ttft-cdf"]);
    // p50 and p99 per point on the latency curves; throughput and goodput by load.
    assert_eq!(charts[0].1, 2 * sw.points.len());
    assert_eq!(charts[2].1, 2 * sw.points.len());
    let a = &sw.analysis;
    let (sat, rec) = (a.saturation.as_ref().unwrap(), a.recommended.as_ref().unwrap());
    assert_ne!(sat.index, rec.index, "the fixture tells the two apart");
    assert_eq!(html.matches(r#"<g class="mark mark-sat">"#).count(), 3);
    assert_eq!(html.matches(r#"<g class="mark mark-rec">"#).count(), 3);
    assert!(html.contains(&format!("saturation: {}", sat.load.label())));
    assert!(html.contains(&format!("recommended: {}", rec.load.label())));
    let back: goodput_core::doc::sweep::SweepResult = serde_json::from_value(embedded(&html)).unwrap();
    assert_eq!(back, sw);
}

/// The points table is one model: a row per point in run order, the
/// analysis's marks on the right rows, HTML's columns and Markdown's the
/// full and the headline ones of the same table.
#[test]
fn sweep_points_are_one_table_that_html_and_markdown_show_at_their_levels() {
    use goodput_report::table::{sweep_points, Cell, Detail, Mark};
    let mut sw = sweep();
    sw.points[5].result.summary.stability = Some(unsteady("a backlog"));
    let t = sweep_points(&sw);
    let labels: Vec<String> = t.rows.iter().map(|r| r.label.clone()).collect();
    let loads: Vec<String> = sw.points.iter().map(|p| p.load.label()).collect();
    assert_eq!(labels, loads);
    let a = &sw.analysis;
    for (i, row) in t.rows.iter().enumerate() {
        let mut want = Vec::new();
        if a.recommended.as_ref().unwrap().index == i {
            want.push(Mark::Recommended);
        }
        if a.saturation.as_ref().unwrap().index == i {
            want.push(Mark::Saturation);
        }
        assert_eq!(row.marks, want, "{i}");
        assert_eq!(row.note.is_some(), i == 5, "{i}");
    }
    assert_eq!(t.rows[5].note.as_deref(), Some("NOT STEADY: a backlog"));
    assert_eq!(t.rows[5].cells[13], Cell::Verdict { pass: Some(false), yes: "steady", no: "NOT STEADY" });
    let full = [
        "origin",
        "req/s",
        "output tok/s",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "E2E p99 (ms)",
        "failed",
        "goodput tok/s",
        // The sweep's SLO has an objective beside its limit: the limit's
        // share the verdict used, then goodput's (every threshold).
        "attainment (limits)",
        "met every threshold",
        "SLO",
        "$ per M",
        "steady",
    ];
    assert_eq!(t.at(Detail::Full).heads(), full);
    let headline = t.at(Detail::Headline);
    assert_eq!(
        headline.heads(),
        [
            "req/s",
            "output tok/s",
            "TTFT p50 (ms)",
            "TTFT p99 (ms)",
            "TPOT p50 (ms)",
            "E2E p99 (ms)",
            "failed",
            "goodput tok/s",
            "SLO",
            "steady"
        ]
    );
    // Each format shows its level's heads, in order.
    let md = text(&Format::Markdown.exporter().render_sweep(&sw).unwrap(), "");
    assert!(md.contains(&format!("| load | {} |\n", headline.heads().join(" | "))), "{md}");
    let html = text(&Format::Html.exporter().render_sweep(&sw).unwrap(), "");
    let heads: String = std::iter::once("load").chain(full).map(|h| format!("<th>{}</th>", escape::html(h))).collect();
    assert!(html.contains(&format!(r#"<table class="points"><thead><tr>{heads}</tr>"#)), "{html}");
    let texts = t.texts(&t.rows[0]);
    assert_eq!(texts[0], "grid");
    assert_eq!(texts[1], format!("{:.3}", sw.points[0].result.summary.throughput.requests_per_s));
}

fn table_lines(md: &str) -> Vec<Vec<&str>> {
    let mut tables: Vec<Vec<&str>> = Vec::new();
    let mut in_table = false;
    for line in md.lines() {
        if line.starts_with('|') {
            if !in_table {
                tables.push(Vec::new());
            }
            tables.last_mut().unwrap().push(line);
            in_table = true;
        } else {
            in_table = false;
        }
    }
    tables
}

/// Pipes that delimit cells: not escaped with a backslash.
fn cells(line: &str) -> usize {
    let b = line.as_bytes();
    (0..b.len()).filter(|&i| b[i] == b'|' && (i == 0 || b[i - 1] != b'\\')).count()
}

#[test]
fn markdown_escapes_hostile_text_and_keeps_tables_whole() {
    let r = adversarial_run();
    let md = text(&render_run(Format::Markdown, &r), "");
    assert!(!md.contains('<') && !md.contains('\x1b'), "raw HTML or escape codes in:\n{md}");
    assert!(md.contains("&lt;script&gt;alert\\(1\\)&lt;/script&gt;"));
    assert!(md.contains("\"=cmd\\|' /C calc'\\!A0\", &lt;b&gt;x&lt;/b&gt;"));
    let b = md.as_bytes();
    assert!((0..b.len()).all(|i| b[i] != b'`' || (i > 0 && b[i - 1] == b'\\')), "unescaped backtick");
    let tables = table_lines(&md);
    assert!(tables.len() >= 4);
    for t in tables {
        let n = cells(t[0]);
        for line in &t {
            assert_eq!(cells(line), n, "ragged row {line}");
        }
    }
}

#[test]
fn markdown_run_snapshot() {
    let p = Profile { requests: 8, concurrency: 2, fail_every: 4, ..Profile::default() };
    let r = run_of("llama-3.1-8b", p, records(p), Some(SLO), false);
    insta::assert_snapshot!("markdown_run", text(&render_run(Format::Markdown, &r), ""));
}

#[test]
fn markdown_sweep_lists_points_and_the_recommendation() {
    let sw = sweep();
    let md = text(&Format::Markdown.exporter().render_sweep(&sw).unwrap(), "");
    assert!(md.contains("- **Recommended** concurrency 16: the most goodput"));
    assert!(md.contains("| concurrency 16 **(recommended)** |"));
    assert!(md.contains("| concurrency 8 _(saturation)_ |"));
    assert_eq!(md.lines().filter(|l| l.starts_with("| concurrency")).count(), sw.points.len());
    assert!(md.contains("\\$0.705 per M"), "dollars are escaped so GitHub does not read maths");
}

#[test]
fn the_clients_own_cpu_reads_the_same_in_every_human_format() {
    let mut r = run();
    r.client = Some(goodput_core::ClientCost {
        cpu_s: 1.5,
        wall_s: 3.0,
        cores: 0.5,
        cpus: 2,
        cpu_us_per_chunk: Some(9.04),
        cpu_us_per_output_token: Some(8.44),
    });
    let line = "0.50 of 2 cores · 8.4 µs per output token · 9.0 µs per chunk";
    assert!(terminal::render(&r).contains(&format!("client CPU      {line}")));
    assert!(text(&render_run(Format::Markdown, &r), "run.md").contains(&format!("| client CPU | {line} |")));
    assert!(text(&render_run(Format::Html, &r), "run.html").contains(line));
    assert!(!terminal::render(&run()).contains("client CPU"), "no measurement, no line");
    // A metric of its own, for compare's rules (a client that got slower).
    let m: goodput_report::Metric = "client.cpu_us_per_output_token".parse().unwrap();
    assert_eq!((m.value(&r), m.value(&run())), (Some(8.44), None));
}

#[test]
fn terminal_shows_hostile_names_as_text_without_control_characters() {
    let r = adversarial_run();
    let out = terminal::render(&r);
    assert!(out.contains("model <script>alert(1)</script>"));
    assert!(out.chars().all(|c| c == '\n' || !c.is_control()), "a control character reached the terminal");
    assert!(out.contains("\\u{1b}[31mred"));
}

#[test]
fn json_round_trips_and_files_are_written_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let r = run();
    let json = text(&render_run(Format::Json, &r), "");
    assert_eq!(serde_json::from_str::<RunResult>(&json).unwrap(), r);

    let path = dir.path().join("run.json");
    assert_eq!(export_run(Format::Json, &r, &path).unwrap(), std::slice::from_ref(&path));
    assert!(matches!(read_document(&path).unwrap(), Document::Run(b) if *b == r));
    let csv = dir.path().join("csv/nested");
    let written = export_run(Format::Csv, &r, &csv).unwrap();
    assert_eq!(written, [csv.join("summary.csv"), csv.join("requests.csv")]);
    let html = dir.path().join("report.html");
    export_run(Format::Html, &r, &html).unwrap();
    assert!(std::fs::read_to_string(&html).unwrap().starts_with("<!DOCTYPE html>"));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let sw = sweep();
    let sw_path = dir.path().join("sweep.json");
    goodput_report::export_sweep(Format::Json, &sw, &sw_path).unwrap();
    assert!(matches!(read_document(&sw_path).unwrap(), Document::Sweep(b) if *b == sw));
    let e = goodput_report::read::read_json(&sw_path).unwrap_err().to_string();
    assert!(e.contains("is a sweep"), "{e}");
}

#[test]
fn every_format_renders_a_comparison() {
    let (a, b) = (run(), slower_run());
    let rules = parse_rules("ttft_ms.p95>+10%").unwrap();
    let c = compare(&[("=base.json", &a), ("<b>cand</b>.json", &b)], &rules);
    for f in Format::ALL {
        let out = f.exporter().render_compare(&c, &[&a, &b]).unwrap();
        match f {
            Format::Csv => {
                let rows = parse_csv(&text(&out, "compare.csv"));
                assert_eq!(
                    rows[0][..5],
                    ["metric", "unit", "'=base.json", "<b>cand</b>.json", "change_<b>cand</b>.json"]
                );
                assert_no_formulas(&rows);
                // Units as the JSON names them: a ratio's values are
                // fractions, and `%` had said otherwise.
                for row in &rows[1..] {
                    assert!(row[1] != "%", "{row:?}");
                    if row[0] == "error_rate" {
                        assert_eq!(row[1], "ratio", "{row:?}");
                    }
                }
                let verdicts = parse_csv(&text(&out, "verdicts.csv"));
                assert_eq!(column(&verdicts, "verdict"), ["fail"]);
            }
            Format::Html => {
                let html = text(&out, "");
                assert_self_contained(&html);
                assert!(html.contains("&lt;b&gt;cand&lt;/b&gt;.json") && !html.contains("<b>cand</b>"));
                let charts = chart_points(&html);
                assert_eq!(charts.len(), 4);
                assert!(charts.iter().all(|(_, n)| *n > 0));
                assert_eq!(html.matches(r#"<g class="series""#).count(), 8, "both runs on each CDF");
            }
            Format::Markdown => {
                let md = text(&out, "");
                assert!(md.contains("&lt;b&gt;cand&lt;/b&gt;.json") && !md.contains('<'));
                assert!(md.contains("❌ fail ttft\\_ms.p95&gt;+10%"));
            }
            Format::Json => {
                let v: serde_json::Value = serde_json::from_str(&text(&out, "")).unwrap();
                assert_eq!((v["schema"].as_str(), v["kind"].as_str()), (Some("goodput/v1"), Some("compare")));
                assert_eq!(v["rows"][0]["metric"], "ttft_ms.p50");
                assert_eq!(v["verdicts"][0]["verdict"], "fail");
                // A comparison read back as a run is refused by name.
                let dir = tempfile::tempdir().unwrap();
                let path = dir.path().join("compare.json");
                out.write_to(&path).unwrap();
                let e = read_document(&path).unwrap_err().to_string();
                assert!(e.contains("is a comparison"), "{e}");
            }
        }
    }
}

/// The CSV folder of a comparison says what the others say above the
/// table (`notes.csv`), and a change left out for another SLO says so in
/// its `call_` cell; both had been missing (a blank cell read as a missing
/// figure).
#[test]
fn a_comparison_s_csv_keeps_its_note_and_says_which_change_another_slo_left_out() {
    let mut b = slower_run();
    b.slo.as_mut().unwrap().spec = "ttft<=61ms".into();
    let c = compare(&[("a.json", &run()), ("b.json", &b)], &[]);
    let note = c.note.clone().expect("another SLO is noted");
    let out = Format::Csv.exporter().render_compare(&c, &[&run(), &b]).unwrap();
    let notes = parse_csv(&text(&out, "notes.csv"));
    assert_eq!(column(&notes, "note"), [note.as_str()]);
    assert_no_formulas(&notes);
    let rows = parse_csv(&text(&out, "compare.csv"));
    let calls: Vec<(&str, &str)> = column(&rows, "metric").into_iter().zip(column(&rows, "call_b.json")).collect();
    let goodput = calls.iter().find(|(m, _)| *m == "goodput.requests_per_s").expect("a goodput row");
    assert_eq!(goodput.1, "other_slo", "{calls:?}");
    assert!(calls.iter().any(|(_, c)| *c != "other_slo"), "only SLO-judged figures: {calls:?}");
    // Runs alike have no note, and no notes.csv.
    let alike = compare(&[("a.json", &run()), ("b.json", &slower_run())], &[]);
    assert_eq!(alike.note, None);
    let out = Format::Csv.exporter().render_compare(&alike, &[&run(), &slower_run()]).unwrap();
    assert!(out.file("notes.csv").is_none());
}

/// Each run's attainment, goodput and SLO verdict in every rendering of a
/// comparison, and the note where the runs were not judged by one SLO:
/// the CSV's `compare.csv` with the attainment's change in percentage
/// points (`change_pp_`), `slo.csv` a row per run, `notes.csv` the note;
/// the JSON's `rows`, `slo` and `note`; the Markdown's and the HTML's
/// verdict row, each run's verdict and what it missed, and the note.
#[test]
fn every_format_shows_each_runs_attainment_goodput_and_slo_verdict() {
    let (a, b) = (run(), slower_run());
    assert!(a.slo.as_ref().unwrap().pass && !b.slo.as_ref().unwrap().pass, "the fixture: a passes, b fails");
    let (ga, gb) = (a.summary.goodput.clone().unwrap(), b.summary.goodput.clone().unwrap());
    let miss = b.slo.as_ref().unwrap().misses()[0].clone();
    let c = compare(&[("a.json", &a), ("b.json", &b)], &[]);
    let pp = (gb.slo_attainment - ga.slo_attainment) * 100.0;
    for f in Format::ALL {
        let out = f.exporter().render_compare(&c, &[&a, &b]).unwrap();
        match f {
            Format::Csv => {
                let rows = parse_csv(&text(&out, "compare.csv"));
                let row = |m: &str| rows.iter().find(|r| r[0] == m).unwrap_or_else(|| panic!("no {m}: {rows:?}"));
                let at = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
                let att = row("goodput.slo_attainment");
                assert_eq!(att[1], "ratio");
                let num = |s: &str| s.parse::<f64>().unwrap_or_else(|_| panic!("{s:?}"));
                assert_eq!((num(&att[at("a.json")]), num(&att[at("b.json")])), (ga.slo_attainment, gb.slo_attainment));
                assert!((num(&att[at("change_pp_b.json")]) - pp).abs() < 1e-9, "{att:?}");
                let good = row("goodput.requests_per_s");
                assert_eq!(num(&good[at("b.json")]), gb.requests_per_s);
                assert_eq!(good[at("change_pp_b.json")], "", "a rate has no change in points");
                let slo = parse_csv(&text(&out, "slo.csv"));
                assert_eq!(slo[0], ["run", "slo", "pass", "misses"]);
                assert_eq!(slo[1][..3], ["a.json", SLO, "true"]);
                assert_eq!(slo[2][..3], ["b.json", SLO, "false"]);
                assert!(slo[2][3].contains(&miss), "{:?}", slo[2]);
                assert_eq!(slo[1][3], "");
                assert!(out.file("notes.csv").is_none(), "one SLO: nothing to note");
            }
            Format::Json => {
                let v: serde_json::Value = serde_json::from_str(&text(&out, "")).unwrap();
                let att =
                    v["rows"].as_array().unwrap().iter().find(|r| r["metric"] == "goodput.slo_attainment").unwrap();
                assert_eq!(att["values"], serde_json::json!([ga.slo_attainment, gb.slo_attainment]));
                assert_eq!(att["changes_pp"], serde_json::json!([null, pp]));
                assert_eq!(v["slo"][0], serde_json::json!({"spec": SLO, "pass": true}));
                assert_eq!(
                    (&v["slo"][1]["spec"], &v["slo"][1]["pass"]),
                    (&serde_json::json!(SLO), &serde_json::json!(false))
                );
                assert_eq!(v["slo"][1]["misses"][0], serde_json::json!(miss));
            }
            Format::Markdown => {
                // Markdown escapes the parentheses.
                let md = text(&out, "").replace("\\(", "(").replace("\\)", ")");
                let row = |name: &str| {
                    md.lines()
                        .find(|l| l.starts_with(&format!("| {name} |")))
                        .unwrap_or_else(|| panic!("no {name}: {md}"))
                };
                // The SLO has an objective beside its limit: goodput's
                // share is named by every threshold.
                let att = row("met every threshold");
                for shown in [
                    format!("{:.2}%", ga.slo_attainment * 100.0),
                    format!("{:.2}%", gb.slo_attainment * 100.0),
                    format!("{pp:+.2} pp"),
                ] {
                    assert!(att.contains(&shown), "{shown} missing: {att}");
                }
                assert_eq!(row("SLO verdict"), "| SLO verdict | ✅ pass | ❌ fail |  |");
                assert_eq!(cells(row("SLO verdict")), cells(att), "a whole row of the table");
                assert!(md.contains("- a.json: pass\n- b.json: FAIL ("), "{md}");
            }
            Format::Html => {
                let html = text(&out, "");
                assert_self_contained(&html);
                assert!(html.contains(r#"<tr><td>SLO verdict</td><td class="better">pass</td><td class="worse">FAIL</td><td></td></tr>"#), "{html}");
                assert!(html.contains(&format!("<td>{:.2}%</td>", gb.slo_attainment * 100.0)));
                assert!(html.contains(&format!("{pp:+.2} pp")));
                assert!(html.contains("<li>b.json: FAIL ("), "{html}");
            }
        }
    }
    // A run with no SLO beside one with: its verdict is `-`, and every
    // rendering says why.
    let mut none = slower_run();
    none.slo = None;
    none.summary.goodput = None;
    let c = compare(&[("a.json", &a), ("b.json", &none)], &[]);
    let note = c.note.clone().expect("a note");
    assert!(note.starts_with("not every run was judged by an SLO"), "{note}");
    for f in Format::ALL {
        let out = f.exporter().render_compare(&c, &[&a, &none]).unwrap();
        match f {
            Format::Csv => {
                assert_eq!(column(&parse_csv(&text(&out, "notes.csv")), "note"), [note.as_str()]);
                let slo = parse_csv(&text(&out, "slo.csv"));
                assert_eq!(slo[2], ["b.json", "", "", ""]);
            }
            Format::Json => {
                let v: serde_json::Value = serde_json::from_str(&text(&out, "")).unwrap();
                assert_eq!(v["note"], serde_json::json!(note));
                assert_eq!(v["slo"][1], serde_json::json!({"spec": null, "pass": null}));
            }
            Format::Markdown => {
                let md = text(&out, "");
                assert!(md.contains("> not every run was judged by an SLO"), "{md}");
                assert!(md.contains("| SLO verdict | ✅ pass | - |  |") && md.contains("- b.json: no SLO"), "{md}");
            }
            Format::Html => {
                let html = text(&out, "");
                assert!(html.contains("note: not every run was judged by an SLO"), "{html}");
                assert!(
                    html.contains(r#"<td class="better">pass</td><td class="">-</td>"#)
                        && html.contains("<li>b.json: no SLO</li>")
                );
            }
        }
    }
}

/// The block as the document holds it, to read by its JSON paths.
fn server_block(r: &RunResult) -> serde_json::Value {
    serde_json::to_value(r.server_signals.as_ref().expect("a run with server signals")).unwrap()
}

/// The scrapes inside the window: what each server series holds.
fn window_scrapes(r: &RunResult) -> usize {
    server_block(r)["window"]["series"]["t_s"].as_array().unwrap().len()
}

fn card(key: &str, value: &str) -> String {
    format!(r#"<div class="k">{key}</div><div class="v">{value}</div>"#)
}

#[test]
fn html_server_signals_show_figures_series_and_the_cross_check() {
    let r = server_run();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    let n = window_scrapes(&r);
    assert!(n >= 20, "the fixture scrapes often enough to draw a shape");
    let server: Vec<(String, usize)> =
        chart_points(&html).into_iter().filter(|(id, _)| id.starts_with("server-")).collect();
    // Running and waiting at every scrape, KV-cache and GPU use too; a rate
    // for every scrape after the first.
    let want = [("server-requests-time", 2 * n), ("server-kv-time", 2 * n), ("server-generation-time", n - 1)];
    assert_eq!(server, want.map(|(id, k)| (id.to_string(), k)));

    let block = server_block(&r);
    let w = &block["window"];
    let f = |path: &str| w.pointer(path).and_then(|v| v.as_f64()).unwrap_or_else(|| panic!("no {path}"));
    assert!(html.contains("engine <b>vllm</b> (with dcgm) · "));
    assert!(html.contains(&card(
        "KV-cache use",
        &format!("{:.1}% <small>peak</small>", f("/gauges/kv_cache_usage_ratio/max") * 100.0)
    )));
    assert!(html.contains(&card(
        "waiting requests",
        &format!("{:.1} <small>mean</small>", f("/gauges/waiting_requests/mean"))
    )));
    assert!(html.contains(&card("prefix-cache hit rate", "25.0%")));
    assert!(html.contains(&card("preemptions", &format!("{}", f("/counters/preemptions/delta")))));
    // The exact mean leads; the percentiles are the buckets they lie in.
    let ttft_mean = f("/histograms/ttft_seconds/mean") * 1e3;
    assert!(html.contains(&card("server TTFT mean", &format!("{ttft_mean:.2} <small>ms</small>"))));
    let [lo, hi] = [0, 1].map(|i| f(&format!("/histograms/ttft_seconds/p50_bucket/{i}")) * 1e3);
    assert!(html.contains(&format!("p50 in the {lo:.0}–{hi:.0} ms bucket")), "{lo}–{hi}");
    // So does the cross-check's p50 row, beside the client's exact p50.
    assert!(html.contains(&format!("<td>{lo:.0}–{hi:.0} (its bucket)</td>")), "{lo}–{hi}");
    assert!(html.contains(&card(
        "generation tokens/s",
        &format!("{:.1} <small>tok/s</small>", f("/counters/generation_tokens/rate_per_s"))
    )));
    assert!(html.contains(&card(
        "energy per output token",
        &format!("{:.3} <small>J</small>", f("/energy_per_output_token_joules"))
    )));

    // The server counted every token and request the client saw.
    let out = r.summary.tokens.output_all;
    assert!(
        html.contains(&format!("<tr><td>output tokens (whole run)</td><td>{out}</td><td>{out}</td><td>+0</td></tr>"))
    );
    assert!(html.contains("<tr><td>requests completed (whole run)</td><td>96</td><td>96</td><td>+0</td></tr>"));
    assert!(html.contains(
        "<tr><td>prompt tokens from the prefix cache (whole run)</td><td>25.0%</td><td>25.0%</td><td>+0.0 points</td></tr>"
    ));
    let block = server_block(&r);
    let notes = block["cross_check"]["notes"].as_array().unwrap();
    // TTFT, tokens and the prefix cache.
    assert_eq!(notes.len(), 3);
    for note in notes {
        assert!(html.contains(&format!("<li>{}</li>", escape::html(note.as_str().unwrap()))));
    }

    // The diagnosis comes right after the verdicts, before the cards.
    use goodput_core::DiagnosisKind;
    let kinds: Vec<DiagnosisKind> = r.diagnosis.iter().map(|d| d.kind).collect();
    assert_eq!(kinds, [DiagnosisKind::QueueBuildUp, DiagnosisKind::KvCachePressure, DiagnosisKind::PrefixCache]);
    let at = |s: &str| html.find(s).unwrap_or_else(|| panic!("no {s}"));
    let diagnosis = at("<h2>Diagnosis</h2>");
    assert!(at("</header>") < diagnosis && diagnosis < at(r#"<section class="cards">"#));
    assert!(at(r#"<section class="cards">"#) < at("<h2>Server signals</h2>"));
    for d in &r.diagnosis {
        assert!(html.contains(&format!("<li>{}</li>", escape::html(&d.message))), "{}", d.message);
    }
    let back: RunResult = serde_json::from_value(embedded(&html)).unwrap();
    assert_eq!(back, r);
}

#[test]
fn html_server_without_recognised_signals_says_so_and_draws_nothing() {
    let mut r = run();
    // What the fixed-timing simulator's /metrics gives: no engine names.
    r.server_signals = serde_json::from_value(serde_json::json!({
        "urls": ["http://127.0.0.1:39645/metrics"], "interval_s": 1.0, "scrapes": 3, "failed_scrapes": 0,
        "parse_errors": 0, "last_error": null, "engine": null,
        "window": {"counters": {}, "energy_per_output_token_joules": null, "engine": null, "gauges": {},
            "histograms": {}, "prefix_cache_hit_rate": null, "scrapes": 1,
            "series": {"gauges": {}, "rates_per_s": {}, "t_s": [1.00432382]}, "sources": [], "span_s": 0.0,
            "window": {"duration_s": 1.26, "end_s": 1.27, "start_s": 0.003}},
        "cross_check": {"client_completed": 40, "client_output_tokens": 1280, "client_ttft_p50_ms": 50.8,
            "notes": [], "server_generation_tokens": null, "server_requests_succeeded": null,
            "server_ttft_p50_ms": null, "ttft_gap_ms": null}
    }))
    .unwrap();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    assert!(html.contains("<h2>Server signals</h2>"));
    assert!(html.contains("none of its metrics is one goodput recognises"));
    assert!(chart_points(&html).iter().all(|(id, _)| !id.starts_with("server-")));
    assert!(!html.contains("Cross-check"), "nothing from the server to set beside the client");
    let md = text(&render_run(Format::Markdown, &r), "");
    assert!(md.contains("**Server signals** no engine recognised · 3 scrapes of http://127.0.0.1:39645/metrics"));
    let csv = text(&render_run(Format::Csv, &r), "server_signals.csv");
    assert_eq!(csv, "t_s\n1.00432382\n");
}

/// An `engine` block that cannot be read (a count that is text) is refused
/// on reading, naming the field, rather than half-read.
#[test]
fn a_document_with_an_unreadable_engine_block_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = serde_json::to_value(estimate_run()).unwrap();
    v["engine"]["steps"] = serde_json::json!("<b>lots</b>");
    let path = dir.path().join("run.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let err = goodput_report::read::read_document(&path).unwrap_err().to_string();
    assert!(err.contains("does not match the goodput/v1 schema") && err.contains("invalid type"), "{err}");
}

#[test]
fn html_estimate_shows_the_simulated_engine() {
    let r = estimate_run();
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    let engine: Vec<(String, usize)> =
        chart_points(&html).into_iter().filter(|(id, _)| id.starts_with("engine-")).collect();
    let want = [("engine-kv-time", ENGINE_SAMPLES), ("engine-requests-time", 2 * ENGINE_SAMPLES)];
    assert_eq!(engine, want.map(|(id, k)| (id.to_string(), k)));
    assert!(html.contains(
        r#"<p class="sub">Llama-3.1-8B on 1× H100 SXM · bf16 · max 8192 batched tokens · prefix caching on</p>"#
    ));
    assert!(html.contains(&card("mean batch", "7.4 <small>seqs</small>")));
    assert!(html.contains(&card("preemptions", "3")));
    assert!(html.contains(&card("KV capacity", "421008 <small>tokens</small>")));
    assert!(html.contains("4096 of 16384 prompt tokens looked up"));
    assert!(!html.contains("<h2>Server signals</h2>") && !html.contains("<h2>Diagnosis</h2>"));
}

#[test]
fn html_keeps_hostile_server_and_engine_strings_as_text() {
    for r in [adversarial_server_run(), adversarial_estimate_run()] {
        let html = text(&render_run(Format::Html, &r), "");
        assert_self_contained(&html);
        assert!(!html.contains("<img") && !html.contains("<!--"));
        assert!(!html.contains("<script>alert") && !html.contains("<script>document"));
        let back: RunResult = serde_json::from_value(embedded(&html)).unwrap();
        assert_eq!(back, r);
    }
    let html = text(&render_run(Format::Html, &adversarial_server_run()), "");
    assert!(html.contains("javascript:alert(1)&lt;/span&gt;&lt;script&gt;"), "an endpoint is text");
    assert!(html.contains("<li>&lt;/script&gt;&lt;!--&lt;img src=x onerror="), "the diagnosis message is text");
    assert!(html.contains("(last error: &lt;/script&gt;&lt;!--"));
}

#[test]
fn csv_server_signals_have_a_row_per_scrape_with_units_in_the_header() {
    let r = server_run();
    let out = render_run(Format::Csv, &r);
    let Rendered::Folder(files) = &out else { panic!("CSV renders a folder") };
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["summary.csv", "requests.csv", "server_signals.csv"]);
    let rows = parse_csv(&text(&out, "server_signals.csv"));
    let header = [
        "t_s",
        "running_requests",
        "waiting_requests",
        "kv_cache_usage_ratio",
        "gpu_utilization_ratio",
        "gpu_memory_used_bytes",
        "gpu_power_watts",
        "generation_tokens_per_s",
        "prompt_tokens_per_s",
        "prefix_cache_query_tokens_per_s",
        "prefix_cache_hit_tokens_per_s",
        "preemptions_per_s",
        "requests_succeeded_per_s",
        "gpu_energy_joules_per_s",
    ];
    assert_eq!(rows[0], header);
    assert_eq!(rows.len(), window_scrapes(&r) + 1);
    assert!(rows.iter().all(|row| row.len() == header.len()));
    let block = server_block(&r);
    let series = &block["window"]["series"];
    let read = |col: &str| -> Vec<Option<f64>> { column(&rows, col).iter().map(|c| c.parse().ok()).collect() };
    let want =
        |v: &serde_json::Value| -> Vec<Option<f64>> { v.as_array().unwrap().iter().map(|x| x.as_f64()).collect() };
    assert_eq!(read("t_s"), want(&series["t_s"]));
    assert_eq!(read("kv_cache_usage_ratio"), want(&series["gauges"]["kv_cache_usage_ratio"]), "exact values");
    let rates = read("generation_tokens_per_s");
    assert_eq!(rates[0], None, "no rate before the second scrape");
    assert_eq!(rates, want(&series["rates_per_s"]["generation_tokens"]));
}

#[test]
fn csv_engine_series_has_a_row_per_sample() {
    let r = estimate_run();
    let out = render_run(Format::Csv, &r);
    let rows = parse_csv(&text(&out, "engine_series.csv"));
    assert_eq!(rows[0], ["t_s", "kv_cache_usage_ratio", "running_requests", "waiting_requests"]);
    assert_eq!(rows.len(), ENGINE_SAMPLES + 1);
    let s = &r.engine.as_ref().unwrap().series;
    assert_eq!(column(&rows, "kv_cache_usage_ratio")[5].parse::<f64>().unwrap(), s.kv_usage[5]);
    assert_eq!(column(&rows, "running_requests")[0], "1");
    assert!(out.file("server_signals.csv").is_none());
}

/// A `server_signals` block that names a signal goodput does not know (a
/// hand-edited or foreign document) is refused on reading, naming the
/// field, rather than half-read.
#[test]
fn a_document_with_an_unreadable_server_block_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v = serde_json::to_value(server_run()).unwrap();
    v["server_signals"]["window"]["gauges"]["=cmd|' /C calc'!A0"] =
        v["server_signals"]["window"]["gauges"]["running_requests"].clone();
    let path = dir.path().join("run.json");
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let err = goodput_report::read::read_document(&path).unwrap_err().to_string();
    assert!(err.contains("does not match the goodput/v1 schema") && err.contains("unknown variant"), "{err}");
}

/// The Markdown from `**Server signals**` (or another heading) to the end.
fn from<'a>(md: &'a str, heading: &str) -> &'a str {
    &md[md.find(heading).unwrap_or_else(|| panic!("no {heading} in:\n{md}"))..]
}

#[test]
fn markdown_lists_the_diagnosis_and_the_server_signals() {
    let r = server_run();
    let md = text(&render_run(Format::Markdown, &r), "");
    let diagnosis = from(&md, "**Diagnosis**\n\n- ⚠️ queue build-up: ");
    assert_eq!(diagnosis.lines().skip(2).take_while(|l| l.starts_with("- ⚠️ ")).count(), 3);
    assert!(md.find("**Diagnosis**") < md.find("**Failures**"), "near the top, with the verdicts");
    insta::assert_snapshot!("markdown_server_signals", from(&md, "**Server signals**"));
}

#[test]
fn markdown_summarises_the_simulated_engine() {
    let md = text(&render_run(Format::Markdown, &estimate_run()), "");
    insta::assert_snapshot!("markdown_engine", from(&md, "**Engine (simulated)**"));
}

#[test]
fn markdown_escapes_hostile_server_and_engine_strings() {
    for r in [adversarial_server_run(), adversarial_estimate_run()] {
        let md = text(&render_run(Format::Markdown, &r), "");
        assert!(!md.contains('<') && !md.contains('\x1b'), "raw HTML or escape codes in:\n{md}");
        let b = md.as_bytes();
        assert!((0..b.len()).all(|i| b[i] != b'`' || (i > 0 && b[i - 1] == b'\\')), "unescaped backtick");
        for t in table_lines(&md) {
            let n = cells(t[0]);
            assert!(t.iter().all(|line| cells(line) == n), "ragged table {t:?}");
        }
    }
    let md = text(&render_run(Format::Markdown, &adversarial_estimate_run()), "");
    assert!(md.contains("**Engine (simulated)** &lt;script&gt;alert\\(1\\)&lt;/script&gt; on 1× &lt;img"));
    assert!(md.contains("\\`bf16\\` \\| \\*\\*x\\*\\*"));
    let md = text(&render_run(Format::Markdown, &adversarial_server_run()), "");
    assert!(md.contains("- ⚠️ &lt;/script&gt;&lt;\\!--&lt;img src=x"), "the diagnosis shows, escaped");
    assert!(md.contains("- ⚠️ =cmd\\|' /C calc'\\!A0"));
}

#[test]
fn terminal_escapes_the_server_side_strings() {
    let out = terminal::render(&adversarial_server_run());
    assert!(out.chars().all(|c| c == '\n' || !c.is_control()), "a control character reached the terminal");
    assert!(out.contains("diagnosis: </script><!--<img src=x"));
    assert!(out.contains("\\u{a}\\u{1b}[31mred"), "the message's line break and escape show as text");
}

#[test]
fn every_format_shows_the_sessions_of_a_multi_turn_run() {
    // The profile's records as 15 sessions of four turns, with the history's
    // tokens growing and the prefix cache serving what came before.
    let p = Profile::default();
    let mut recs = records(p);
    for r in &mut recs {
        let turn = (r.id % 4) as u32 + 1;
        r.session = Some(goodput_core::SessionTurn { id: r.id / 4, turn, turns: 4 });
        r.input_tokens = 256 * turn as u64;
        r.counts.usage_cached_prompt = Some(256 * (turn as u64 - 1));
    }
    let r = run_of("llama-3.1-8b", p, recs, None, true);
    let ss = r.summary.sessions.as_ref().unwrap();
    assert_eq!(ss.by_turn.len(), 4);
    let html = text(&render_run(Format::Html, &r), "");
    assert_self_contained(&html);
    assert!(html.contains("<h2>Sessions</h2>") && html.contains("served from prefix cache"));
    assert!(html.contains(&format!("{} started · {} completed", ss.started, ss.completed)));
    let drawn: Vec<(String, usize)> =
        chart_points(&html).into_iter().filter(|(id, _)| id.starts_with("session-")).collect();
    // TTFT p50 and p99 at each of 4 turns; input and cached tokens likewise.
    assert_eq!(drawn, [("session-ttft".to_string(), 8), ("session-prompt".to_string(), 8)]);
    let md = text(&render_run(Format::Markdown, &r), "");
    let table = table_lines(&md).into_iter().find(|t| t[0].contains("| turn |")).expect("a by-turn table");
    assert_eq!(table.len(), 2 + 4);
    assert!(table[5].starts_with("| 4 | ") && table[5].contains("| 1024 | 768 |"), "{}", table[5]);
    assert!(md.contains(" per session"));
    let rows = parse_csv(&text(&render_run(Format::Csv, &r), "requests.csv"));
    assert_eq!(&rows[0][..3], ["session", "turn", "turns"]);
    assert_eq!(&rows[4][..3], ["0", "4", "4"]);
    let summary = parse_csv(&text(&render_run(Format::Csv, &r), "summary.csv"));
    assert_eq!(column(&summary, "sessions_started"), [ss.started.to_string()]);
    assert!(column(&summary, "usd_per_session")[0].parse::<f64>().unwrap() > 0.0);
    let term = goodput_report::terminal::render(&r);
    assert!(term.contains("sessions: 15 started") && term.contains("per session"), "{term}");
    // compare shows sessions per second and their price when a run has them, and not otherwise.
    let labels = |c: &goodput_report::compare::Comparison| -> Vec<String> {
        serde_json::to_value(c).unwrap()["rows"].as_array().unwrap().iter().map(|r| r["metric"].to_string()).collect()
    };
    let with = labels(&goodput_report::compare::compare(&[("a", &r), ("b", &r)], &[]));
    assert!(with.iter().any(|m| m.contains("sessions.per_s")) && with.iter().any(|m| m.contains("usd_per_session")));
    let plain = run();
    let without = labels(&goodput_report::compare::compare(&[("a", &plain), ("b", &plain)], &[]));
    assert!(!without.iter().any(|m| m.contains("session")), "{without:?}");
}

/// The terminal summary's small words: a failure count comes with what the
/// server said; an import that names no server or model leaves no empty
/// field; a vLLM TTFT far below goodput's says why; one metrics URL is not
/// counted as "of 1".
#[test]
fn terminal_says_what_failed_and_leaves_no_empty_field() {
    let mut r = run();
    r.summary.requests.errors_by_kind.insert("http_status".into(), 6);
    r.summary.requests.error_samples.insert("http_status".into(), "HTTP 503 Service Unavailable: overloaded".into());
    r.target.url = String::new();
    r.target.model = String::new();
    r.compat.vllm.mean_ttft_ms = r.summary.ttft_ms.mean.map(|m| m / 100.0);
    let out = terminal::render(&r);
    assert!(
        out.contains("failures: http_status 6\n  first http_status: HTTP 503 Service Unavailable: overloaded"),
        "{out}"
    );
    let head = out.lines().next().unwrap();
    assert!(!head.contains("·  ·") && !head.contains("model  ·") && !head.ends_with("· "), "{head}");
    // compat.vllm follows vLLM 0.33, which skips a role-only chunk (probe
    // 82: the note had said role-only chunks were included).
    let note = terminal::vllm_ttft_note(&r).unwrap();
    assert!(out.contains("vLLM's TTFT") && note.contains("is the first token"), "{out}");
    assert!(note.contains("a role-only one skipped") && !note.contains("role-only or empty one included"), "{note}");
    let sig = terminal::render(&server_run());
    assert!(!sig.contains("scrapes of 1)"), "{sig}");
}

/// The terminal summary fits an 80-column terminal (every line, the
/// latency table's columns chosen to fit, prose wrapped at words), and a
/// wider one shows every column.
#[test]
fn terminal_summary_fits_80_columns() {
    for r in [run(), server_run(), adversarial_run()] {
        let out = terminal::render_width(&r, 80);
        for line in out.lines() {
            assert!(line.chars().count() <= 80 || !line.contains(' '), "{} chars: {line}", line.chars().count());
        }
    }
    let narrow = terminal::render_width(&server_run(), 80);
    insta::assert_snapshot!("terminal_80_columns", narrow);
    let head = |s: &str| s.lines().find(|l| l.starts_with("latency (ms)")).unwrap().to_string();
    assert!(!head(&narrow).contains("std") && narrow.contains("(std on a wider terminal"), "{narrow}");
    // Markdown shows the headline columns alone: not named where std is.
    assert!(narrow.contains("and in -o, --html and --csv)") && !narrow.contains("--markdown"), "{narrow}");
    let md = text(&render_run(Format::Markdown, &server_run()), "");
    assert!(!md.lines().any(|l| l.starts_with("| latency (ms)") && l.contains("std")), "{md}");
    let wide = terminal::render_width(&server_run(), 140);
    assert!(head(&wide).contains("std") && !wide.contains("on a wider terminal"), "{wide}");
}

/// The rows of a run's rates-and-shares intervals table: label, measured, interval.
fn interval_rows(r: &RunResult) -> Vec<(String, String, String)> {
    let t = goodput_report::intervals::rates(r).unwrap();
    let t = t.at(goodput_report::table::Detail::Full);
    t.rows
        .iter()
        .filter(|row| row.key.contains("attainment"))
        .map(|row| {
            let x = t.texts(row);
            (row.label.clone(), x[0].clone(), x[1].clone())
        })
        .collect()
}

/// Beside an objective the verdict holds the limit's share to its target:
/// the intervals table gives that share, with an interval of its own, as
/// the attainment, and goodput's (every threshold) named so; it had given
/// goodput's 60% alone as the attainment beside a verdict that 100% within
/// the limit passed. An SLO of limits alone keeps its one row.
#[test]
fn a_mixed_slos_intervals_give_the_verdicts_share_and_goodputs() {
    use goodput_report::metric::Unit;
    let r = mixed_run(3);
    let gi = r.summary.intervals.as_ref().unwrap().goodput.clone().unwrap();
    let limits_iv = gi.limits_attainment.expect("the limits' share has an interval");
    assert_eq!(limits_iv.hi, Some(1.0));
    let iv = |i| goodput_report::intervals::text(i, Unit::Ratio);
    assert_eq!(
        interval_rows(&r),
        [
            ("attainment (limits)".to_string(), "100.00%".to_string(), iv(&limits_iv)),
            ("met every threshold".to_string(), "60.00%".to_string(), iv(&gi.slo_attainment)),
        ]
    );
    let md = text(&render_run(Format::Markdown, &r), "");
    assert!(md.contains(&format!("| attainment \\(limits\\) | 100.00% | {} |", md_escape(&iv(&limits_iv)))), "{md}");
    // Limits alone: one share, the attainment.
    let alone = limits_alone(&r);
    let g = alone.summary.intervals.as_ref().unwrap().goodput.clone().unwrap();
    assert_eq!(g.limits_attainment, None);
    assert_eq!(interval_rows(&alone), [("attainment".to_string(), "60.00%".to_string(), iv(&g.slo_attainment))]);
}

/// `r`'s requests judged by `ttft<=100ms` alone: the share that met every
/// threshold is the limit's.
fn limits_alone(r: &RunResult) -> RunResult {
    run_of("llama-3.1-8b", Profile::default(), r.requests.clone().unwrap(), Some("ttft<=100ms"), true)
}

/// `summary.csv` gives the limits' share the verdict held to its target
/// (`slo_limits_attainment`, with `_lo` and `_hi`) beside goodput's
/// (`slo_attainment`, every threshold): it had no column for the verdict's
/// share. With limits alone the two columns agree.
#[test]
fn a_mixed_slos_summary_csv_gives_the_verdicts_share_beside_goodputs() {
    let r = mixed_run(3);
    let limits_iv = r.summary.intervals.as_ref().unwrap().goodput.as_ref().unwrap().limits_attainment.unwrap();
    let rows = parse_csv(&text(&render_run(Format::Csv, &r), "summary.csv"));
    let get = |name: &str| column(&rows, name)[0].to_string();
    assert_eq!(
        (get("slo_limits_attainment"), get("slo_attainment"), get("slo_pass")),
        ("1".into(), "0.6".into(), "true".into())
    );
    assert_eq!(get("slo_limits_attainment_lo"), limits_iv.lo.unwrap().to_string());
    assert_eq!(get("slo_limits_attainment_hi"), "1");
    let rows = parse_csv(&text(&render_run(Format::Csv, &limits_alone(&r)), "summary.csv"));
    let get = |name: &str| column(&rows, name)[0].to_string();
    assert_eq!((get("slo_limits_attainment"), get("slo_attainment")), ("0.6".into(), "0.6".into()));
    assert_eq!(get("slo_limits_attainment_lo"), get("slo_attainment_lo"));
}

/// Markdown's escape of an interval's brackets.
fn md_escape(s: &str) -> String {
    s.replace('[', "\\[").replace(']', "\\]")
}

/// A document saved before the limits were counted alone beside
/// objectives: its saved share counted every threshold, and every view
/// names it so, as goodput's share (it had been named `ttft<=10s`, the
/// limit every request met); it has no limits' share to give.
#[test]
fn a_document_saved_before_names_its_every_threshold_share_so() {
    let old = mixed_run_saved_before(3);
    let every = "every threshold (ttft<=10s, ttft<=100ms)";
    let term = terminal::render_width(&old, 200);
    assert!(term.contains("· attainment 60.0% ·"), "{term}");
    assert!(!term.contains("met every threshold"), "{term}");
    assert!(term.contains(&format!("{every} 36 of 60 good (60.0%, target 90.0%) FAIL")), "{term}");
    let md = text(&render_run(Format::Markdown, &old), "");
    assert!(md.contains("· attainment 60.00% (36 of 60 good) ·"), "{md}");
    assert!(
        md.contains(&format!(
            "Requests meeting {}: 36 of 60 (60.00%), target 90.00%: ❌ fail",
            every.replace('<', "&lt;").replace('(', "\\(").replace(')', "\\)")
        )),
        "{md}"
    );
    let html = text(&render_run(Format::Html, &old), "");
    assert!(
        html.contains(&format!("{} · 36 of 60 requests good (60.00%, target 90.00%)", escape::html(every))),
        "{html}"
    );
    let iv = old.summary.intervals.as_ref().unwrap().goodput.clone().unwrap();
    assert_eq!(
        interval_rows(&old),
        [(
            "attainment".to_string(),
            "60.00%".to_string(),
            goodput_report::intervals::text(&iv.slo_attainment, goodput_report::metric::Unit::Ratio)
        )]
    );
    let rows = parse_csv(&text(&render_run(Format::Csv, &old), "summary.csv"));
    let get = |name: &str| column(&rows, name)[0].to_string();
    assert_eq!(
        (get("slo_limits_attainment"), get("slo_attainment"), get("slo_pass")),
        ("".into(), "0.6".into(), "false".into())
    );
}

/// A sweep under an SLO with an objective beside its limit: the points'
/// table gives each point's verdict share, the limit's, as its attainment,
/// and goodput's (every threshold) in a column of its own named so; HTML
/// shows both, and `points.csv` has `slo_limits_attainment` beside
/// `slo_attainment`. A sweep of limits alone keeps its one column.
#[test]
fn a_mixed_slos_sweep_table_gives_the_verdicts_share_and_goodputs() {
    use goodput_report::table::{sweep_points, Detail};
    let mut sw = sweep();
    sw.points.truncate(2);
    sw.points[0].result = mixed_run(3);
    sw.points[1].result = mixed_run(4);
    sw.config.judge.slo = Some(MIXED_SLO.into());
    sw.analysis = goodput_core::doc::sweep::analyze_sweep(&sw.points, 0.9);
    let t = sweep_points(&sw).at(Detail::Full);
    let heads = t.heads();
    let at = |h: &str| heads.iter().position(|x| *x == h).unwrap_or_else(|| panic!("no {h}: {heads:?}"));
    assert_eq!(at("met every threshold"), at("attainment (limits)") + 1);
    assert!(!heads.contains(&"attainment"), "{heads:?}");
    let cells: Vec<(String, String)> = t
        .rows
        .iter()
        .map(|row| {
            let x = t.texts(row);
            (x[at("attainment (limits)")].clone(), x[at("met every threshold")].clone())
        })
        .collect();
    assert_eq!(cells, [("100.00%".into(), "60.00%".into()), ("100.00%".into(), "80.00%".into())]);
    let html = text(&Format::Html.exporter().render_sweep(&sw).unwrap(), "");
    assert!(html.contains("<th>attainment (limits)</th><th>met every threshold</th><th>SLO</th>"), "{html}");
    let rows = parse_csv(&text(&Format::Csv.exporter().render_sweep(&sw).unwrap(), "points.csv"));
    assert_eq!(column(&rows, "slo_limits_attainment"), ["1", "1"]);
    assert_eq!(column(&rows, "slo_attainment"), ["0.6", "0.8"]);
    // Limits alone: the one attainment column, goodput's share.
    for p in &mut sw.points {
        p.result = limits_alone(&p.result);
    }
    let t = sweep_points(&sw).at(Detail::Full);
    let heads = t.heads();
    assert!(heads.contains(&"attainment") && !heads.iter().any(|h| h.contains("threshold") || h.contains("limits")));
    let i = heads.iter().position(|h| *h == "attainment").unwrap();
    assert_eq!(t.texts(&t.rows[1])[i], "80.00%");
}

/// A run whose cancelled requests streamed 5% or more of its output says
/// under `tokens` how many the rates left out, and the rate with them; one
/// whose cancelled requests streamed less says nothing.
#[test]
fn terminal_says_what_output_the_rates_left_out() {
    use goodput_core::Outcome;
    let p = Profile { requests: 100, concurrency: 8, seed: 4, ..Profile::default() };
    let cut = |k: usize| {
        let mut recs = records(p);
        let n = recs.len();
        for r in recs.iter_mut().skip(n - k) {
            r.outcome = Outcome::Cancelled;
        }
        let left: u64 = recs.iter().skip(n - k).map(|r| r.output_tokens).sum();
        (run_of("m", p, recs, None, false), left)
    };
    let (r, left) = cut(8);
    let tok = &r.summary.tokens;
    assert_eq!((r.summary.requests.cancelled, tok.output_all - tok.output), (8, left));
    let text = terminal::render_width(&r, 400);
    let line = text.lines().find(|l| l.starts_with("  not counted")).unwrap_or_else(|| panic!("{text}"));
    let share = 100.0 * left as f64 / tok.output_all as f64;
    let rate = tok.output_all as f64 / r.window.duration_s;
    for want in [
        format!(" {left}   output tokens of the 8 cancelled requests ({share:.0}% of all streamed)"),
        format!("with them, {rate:.1} output tok/s"),
    ] {
        assert!(line.contains(&want), "{line} lacks {want}");
    }
    assert!(rate > r.summary.throughput.output_tokens_per_s);
    let (r, left) = cut(1);
    assert!((left as f64) < 0.05 * r.summary.tokens.output_all as f64);
    assert!(!terminal::render_width(&r, 400).contains("not counted"));
}

/// The intervals' note says which percentiles were widened for the
/// dependence between neighbouring requests, and where the users moved in
/// lockstep that the requests were not independent, in the terminal,
/// Markdown and HTML; a run with neither keeps the plain note.
#[test]
fn intervals_of_a_lockstep_run_say_its_requests_were_not_independent() {
    use goodput_core::{doc::result::Diagnosis, DiagnosisKind};
    let p = Profile { requests: 100, concurrency: 8, seed: 4, ..Profile::default() };
    let mut r = run_of("m", p, records(p), None, false);
    // Whatever the fixture's batch means found, the note is read from these.
    r.summary.intervals.as_mut().unwrap().dependence.clear();
    let unseen = "which these, sent in waves, were not: the percentiles";
    // Markdown escapes the brackets between these.
    let widened = "except 1 interval widened where neighbouring requests depended on each other";
    let most = "most, TTFT p50, as 6.5× fewer requests";
    let seen = "these were sent in waves";
    let texts = |r: &RunResult| {
        [
            terminal::render_width(r, 400),
            text(&render_run(Format::Markdown, r), "summary.md"),
            text(&render_run(Format::Html, r), "report.html"),
        ]
    };
    let says = |r: &RunResult, has: &[&str], lacks: &[&str]| {
        for t in texts(r) {
            for h in has {
                assert!(t.contains(h), "lacks {h}: {t}");
            }
            for l in lacks {
                assert!(!t.contains(l), "has {l}: {t}");
            }
        }
    };
    says(&r, &["requests taken as independent; rates by batch means"], &[unseen, widened, seen]);
    let widen = |r: &mut RunResult| {
        let row = [("p50".to_string(), 6.5)].into_iter().collect();
        r.summary.intervals.as_mut().unwrap().dependence.insert("ttft_ms".into(), row);
    };
    let mut w = r.clone();
    widen(&mut w);
    says(&w, &[widened, most], &[unseen, seen]);
    r.diagnosis.push(Diagnosis { kind: DiagnosisKind::Lockstep, message: "the 8 users moved in lockstep".into() });
    says(&r, &[unseen], &[widened, seen]);
    widen(&mut r);
    says(&r, &[widened, most, seen], &[unseen]);
}

/// A run that `--until` or `--stop-on-slo` stopped early while its users
/// moved in lockstep says the stop may have come too soon; a run without
/// waves, or one stopped at its cap, does not.
#[test]
fn an_early_stop_of_a_lockstep_run_says_it_may_have_come_too_soon() {
    use goodput_core::analysis::until::{Stop, StopReason};
    use goodput_core::{doc::result::Diagnosis, DiagnosisKind};
    let p = Profile { requests: 100, concurrency: 8, seed: 4, ..Profile::default() };
    let mut r = run_of("m", p, records(p), None, false);
    let said = "it may have stopped too soon; start the users apart, or repeat it with --runs N";
    let stop =
        |reason| Some(Stop { reason, detail: "ttft_ms.p50 ±5%".into(), at_requests: Some(100), looks: Some(3) });
    r.stop = stop(StopReason::UntilMet);
    let plain = goodput_report::format::stop_text(&r).unwrap();
    assert!(plain.starts_with("until_met after 100 requests (3 looks): ttft_ms.p50 ±5%") && !plain.contains(said));
    r.diagnosis.push(Diagnosis { kind: DiagnosisKind::Lockstep, message: "the 8 users moved in lockstep".into() });
    for reason in [StopReason::UntilMet, StopReason::SloDecided] {
        r.stop = stop(reason);
        let t = goodput_report::format::stop_text(&r).unwrap();
        assert!(t.contains(said), "{t}");
        assert!(terminal::render_width(&r, 400).contains(said));
    }
    r.stop = stop(StopReason::Cap);
    assert!(!goodput_report::format::stop_text(&r).unwrap().contains(said));
}
