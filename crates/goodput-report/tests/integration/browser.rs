//! The HTML reports in a real browser (headless Chromium): each page loads
//! with no console message, its checking script marks it rendered, every
//! chart drew all its points with a real size, and hostile strings never
//! became markup. Screenshots and the pages land in target/test-artifacts/
//! for a person (or CI) to look at.
//!
//! Needs `chromium` (scripts/install-test-deps.sh installs it); set
//! GOODPUT_SKIP_BROWSER=1 to skip.

use crate::common;

use goodput_report::{compare, parse_rules, Format, Rendered};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BROWSERS: [&str; 4] = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"];
const LIMIT: Duration = Duration::from_secs(120);

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("GOODPUT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    BROWSERS.iter().flat_map(|b| std::env::split_paths(&path).map(move |d| d.join(b))).find(|p| p.is_file())
}

/// The browser, or `None` when the test is to be skipped; a missing browser
/// without the opt-out is a failure that says how to fix it.
fn browser_or_skip() -> Option<PathBuf> {
    if std::env::var("GOODPUT_SKIP_BROWSER").is_ok_and(|v| v == "1") {
        eprintln!("GOODPUT_SKIP_BROWSER=1: skipping the browser test");
        return None;
    }
    match chromium() {
        Some(b) => Some(b),
        None => panic!(
            "no headless Chromium found ({} on PATH, or $GOODPUT_CHROMIUM). Install it with \
             scripts/install-test-deps.sh (on Debian: apt-get update && apt-get install -y chromium), \
             or set GOODPUT_SKIP_BROWSER=1 to skip the browser test",
            BROWSERS.join(", ")
        ),
    }
}

/// `<target>/test-artifacts`, beside the profile folder this test runs from.
fn artifacts() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // <target>/<profile>/deps/<test binary>
    let target = exe.ancestors().nth(3).expect("the test binary lives under target/<profile>/deps");
    let dir = target.join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the browser on `page` with `extra` arguments; returns stdout and stderr.
fn run_browser(browser: &Path, page: &Path, extra: &[String]) -> (String, String) {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    // Drain both pipes on threads so a chatty browser cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut out, &mut s).map(|_| s).unwrap_or_default()
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut err, &mut s).map(|_| s).unwrap_or_default()
    });
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let (out, err) = (out.join().unwrap(), err.join().unwrap());
            assert!(status.success(), "{} exited with {status}:\n{err}", browser.display());
            return (out, err);
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{} did not finish {} within {LIMIT:?}", browser.display(), page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn attr(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    Some(tag[i..i + tag[i..].find('"')?].to_string())
}

/// The opening tags named `name` in a dumped DOM.
fn open_tags<'a>(dom: &'a str, name: &str) -> Vec<&'a str> {
    let open = format!("<{name} ");
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(i) = rest.find(&open) {
        let end = i + rest[i..].find('>').unwrap();
        out.push(&rest[i..=end]);
        rest = &rest[end..];
    }
    out
}

/// Loads `html` as `name`.html, checks it rendered cleanly with `charts`
/// drawn, and saves a screenshot as `name`.png.
fn check_page(browser: &Path, name: &str, html: &Rendered, charts: &[&str]) -> String {
    let html = html.file("").expect("HTML is one file");
    let dir = artifacts();
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let (dom, log) = run_browser(browser, &page, &["--dump-dom".to_string()]);

    let console: Vec<&str> =
        log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught") || l.contains("Refused to")).collect();
    assert!(console.is_empty(), "{name}: the page logged to the console:\n{}", console.join("\n"));
    let body = open_tags(&dom, "body").into_iter().next().unwrap_or_else(|| panic!("{name}: no <body> in:\n{dom}"));
    assert_eq!(attr(body, "data-render-error"), None, "{name}: the page reported a problem");
    assert_eq!(attr(body, "data-render-ok").as_deref(), Some("1"), "{name}: the checking script did not finish");
    assert_eq!(attr(body, "data-json-ok").as_deref(), Some("1"), "{name}: the embedded document did not parse");
    assert_eq!(attr(body, "data-pwned"), None, "{name}: a hostile string ran as code");
    assert_eq!(attr(body, "data-charts"), Some(charts.len().to_string()));
    let figures = open_tags(&dom, "figure");
    let drawn: Vec<(String, usize, usize)> = figures
        .iter()
        .map(|f| {
            let n = |k| attr(f, k).and_then(|v| v.parse().ok()).unwrap_or(0);
            (attr(f, "data-chart").unwrap_or_default(), n("data-points"), n("data-drawn"))
        })
        .collect();
    let ids: Vec<&str> = drawn.iter().map(|(id, ..)| id.as_str()).collect();
    assert_eq!(ids, charts, "{name}");
    for (id, want, got) in &drawn {
        assert!(*want > 0 && got == want, "{name}: chart {id} drew {got} of {want} points");
    }
    assert_eq!(dom.matches("<script").count(), 2, "{name}: a script element appeared from the data");

    let shot = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    run_browser(browser, &page, &[format!("--screenshot={}", shot.display()), "--window-size=1280,2000".into()]);
    let png = std::fs::read(&shot).unwrap_or_else(|e| panic!("{name}: no screenshot at {}: {e}", shot.display()));
    assert!(png.starts_with(b"\x89PNG") && png.len() > 20_000, "{name}: the screenshot looks empty");
    dom
}

const RUN_CHARTS: [&str; 7] =
    ["ttft-cdf", "tpot-cdf", "itl-cdf", "e2e-cdf", "throughput-time", "inflight-time", "ttft-time"];
const CDFS: [&str; 4] = ["ttft-cdf", "tpot-cdf", "itl-cdf", "e2e-cdf"];

#[test]
fn run_report_renders_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_run(&common::run()).unwrap();
    check_page(&b, "report", &html, &RUN_CHARTS);
}

#[test]
fn hostile_run_report_shows_everything_as_text() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_run(&common::adversarial_run()).unwrap();
    let dom = check_page(&b, "adversarial-report", &html, &RUN_CHARTS);
    // In the live DOM the model name is a text node, serialised escaped.
    assert!(dom.contains("<h1>&lt;script&gt;alert(1)&lt;/script&gt;</h1>"), "{dom}");
    assert!(!dom.contains("<img"));
}

#[test]
fn sweep_report_renders_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_sweep(&common::sweep()).unwrap();
    check_page(&b, "sweep-report", &html, &["sweep-ttft", "sweep-e2e", "sweep-goodput", "sweep-ttft-cdf"]);
}

/// A sweep whose SLO judges TPOT has a TPOT curve; a stages sweep, its
/// timeline, from the records or from its stages' summaries.
#[test]
fn sweep_pages_with_objectives_and_stages_render_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let sw = common::sweep_of("ttft:p95<=250ms,tpot:p90<=9ms", |i| i % 2 == 0);
    let html = Format::Html.exporter().render_sweep(&sw).unwrap();
    let ids = ["sweep-ttft", "sweep-tpot", "sweep-e2e", "sweep-goodput", "sweep-ttft-cdf"];
    check_page(&b, "sweep-objectives-report", &html, &ids);
    let ids = [&["stages-throughput", "stages-ttft", "stages-inflight"][..], &ids[..]].concat();
    let ids: Vec<&str> = ids.into_iter().filter(|id| *id != "sweep-tpot").collect();
    let mut st = common::stages_sweep();
    check_page(&b, "stages-report", &Format::Html.exporter().render_sweep(&st).unwrap(), &ids);
    for p in &mut st.points {
        p.result.requests = None;
    }
    check_page(&b, "stages-summary-report", &Format::Html.exporter().render_sweep(&st).unwrap(), &ids);
}

#[test]
fn compare_report_renders_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let (a, s) = (common::run(), common::slower_run());
    let c = compare(&[("baseline.json", &a), ("candidate.json", &s)], &parse_rules("ttft_ms.p95>+10%").unwrap());
    let html = Format::Html.exporter().render_compare(&c, &[&a, &s]).unwrap();
    check_page(&b, "compare-report", &html, &CDFS);
}

const SERVER_CHARTS: [&str; 3] = ["server-requests-time", "server-kv-time", "server-generation-time"];
const ENGINE_CHARTS: [&str; 2] = ["engine-kv-time", "engine-requests-time"];

/// A run's charts, then those of its server or engine section.
fn with(extra: &[&'static str]) -> Vec<&'static str> {
    RUN_CHARTS.iter().chain(extra).copied().collect()
}

#[test]
fn server_signals_report_renders_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_run(&common::server_run()).unwrap();
    let dom = check_page(&b, "server-report", &html, &with(&SERVER_CHARTS));
    assert!(dom.contains("<h2>Diagnosis</h2>") && dom.contains("queue build-up: "), "the diagnosis shows");
    assert!(dom.contains("<h2>Server signals</h2>") && dom.contains("engine <b>vllm</b>"));
    assert!(dom.contains("tokens agree: server"), "the cross-check notes show");
}

#[test]
fn hostile_server_signals_show_as_text() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_run(&common::adversarial_server_run()).unwrap();
    let dom = check_page(&b, "adversarial-server-report", &html, &with(&SERVER_CHARTS));
    // An endpoint, the scrape error and a diagnosis are text nodes, serialised escaped.
    assert!(dom.contains("javascript:alert(1)&lt;/span&gt;&lt;script&gt;"), "{dom}");
    assert!(dom.contains("<li>&lt;/script&gt;&lt;!--&lt;img src=x onerror="), "the diagnosis message is text");
    assert!(!dom.contains("<img"));
}

#[test]
fn estimate_report_renders_its_engine_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let html = Format::Html.exporter().render_run(&common::estimate_run()).unwrap();
    let dom = check_page(&b, "estimate-report", &html, &with(&ENGINE_CHARTS));
    assert!(dom.contains("<h2>Engine (simulated)</h2>") && dom.contains("Llama-3.1-8B on 1× H100 SXM"));
    let html = Format::Html.exporter().render_run(&common::adversarial_estimate_run()).unwrap();
    let dom = check_page(&b, "adversarial-estimate-report", &html, &with(&ENGINE_CHARTS));
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt; on 1× &lt;img src=x"), "{dom}");
    assert!(!dom.contains("<img"));
}

#[test]
fn frontier_report_renders_in_a_browser() {
    let Some(b) = browser_or_skip() else { return };
    let doc = common::frontier_doc();
    assert_eq!(doc.frontier.len(), 5, "{:?}", doc.frontier);
    let html = Rendered::File(goodput_report::export::html::frontier_page(&doc).unwrap().into_bytes());
    let dom = check_page(&b, "frontier-report", &html, &["frontier"]);
    assert!(dom.contains("Pareto frontier") && dom.contains("best: h100 tp1x2 fp8"), "{dom}");
    assert!(dom.contains("dominated: its nearest point to the frontier"), "why the h200 lost shows");
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;") && !dom.contains("<img"), "ids are text");
}

/// A predicted frontier beside a measured one: both curves of each paired
/// configuration and both Pareto frontiers on one chart, the errors, and
/// what is on one side only (hostile ids as text).
#[test]
fn frontier_comparison_renders_in_a_browser() {
    use goodput_core::doc::frontier::{analyze_frontier, FrontierSource};
    let Some(b) = browser_or_skip() else { return };
    let mut pred = common::frontier_doc();
    for (i, c) in pred.configs.iter_mut().enumerate() {
        c.params.insert("max_num_seqs".into(), (64u32 << i).to_string());
    }
    let mut meas = pred.clone();
    meas.source = FrontierSource::Measured;
    // Measured a fifth slower than predicted: the prediction is 25% high.
    for c in &mut meas.configs {
        for p in &mut c.points {
            p.output_tokens_per_s_per_gpu *= 0.8;
        }
    }
    meas.configs.remove(2);
    analyze_frontier(&mut meas);
    let c = goodput_core::doc::overlay::compare_frontiers(("plan.json", pred), ("frontier.json", meas));
    assert_eq!(c.pairs.len(), 2);
    let html = Rendered::File(goodput_report::export::html::overlay_page(&c).unwrap().into_bytes());
    let dom = check_page(&b, "frontier-compare-report", &html, &["frontier-compare"]);
    assert!(dom.contains("measured Pareto frontier") && dom.contains("+25.0%"), "{dom}");
    assert!(dom.contains("On one side only") && dom.contains("h200 tp1x2 bf16"), "{dom}");
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;") && !dom.contains("<img"), "ids are text");
}
