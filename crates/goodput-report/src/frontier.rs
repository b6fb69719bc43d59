//! A frontier document (`goodput plan`, `sweep --serve-grid`) rendered: the
//! terminal's table of the frontier with the best point and why the other
//! configurations lost, a CSV with a row per point, and an HTML page with
//! the chart (tokens/s per user against output tokens/s per GPU).

use crate::escape::{csv_num, csv_text, terminal as esc};
use goodput_core::doc::frontier::{ConfigStatus, FrontierPoint, FrontierResult, FrontierSource, PointId};
use std::collections::HashSet;
use std::fmt::Write;

fn num(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

fn verdict(p: &FrontierPoint) -> &'static str {
    match p.meets_slo {
        Some(true) => "met",
        Some(false) => "missed",
        None => "-",
    }
}

/// A point not steady, in words for its row (the CSV's note, the page's
/// tag): "not steady", and the reason its `unsteady` field gives (a trace
/// plan's verdict) after a colon; `None` for a point steady or not judged.
pub(crate) fn unsteady_note(p: &FrontierPoint) -> Option<String> {
    (p.steady == Some(false)).then(|| match p.extra.get("unsteady").and_then(|w| w.as_str()) {
        Some(why) if !why.is_empty() => format!("not steady: {why}"),
        _ => "not steady".to_string(),
    })
}

/// The document in the terminal: what was searched, the frontier's points
/// (from the fastest per user to the fastest per GPU) with, when every
/// configuration is priced, the per-dollar frontier's and a column saying
/// which frontier each is on, the best point, and a line per configuration
/// off the frontier. Text from the document passes
/// through `escape::terminal`.
pub fn terminal(doc: &FrontierResult) -> String {
    let mut o = String::new();
    // Those whose points are another's ran nothing of their own: counted
    // apart (they had been counted as having run).
    let shared = doc.configs.iter().filter(|c| c.points_of.is_some()).count();
    let ran = doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok && c.points_of.is_none()).count();
    let points: usize = doc.points().count();
    let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
    let sharing = match (shared, ran) {
        (0, _) => String::new(),
        (k, 1) => format!(", {k} share its points"),
        (k, _) => format!(", {k} share another's points"),
    };
    // No model when no configuration ran: left out, not an empty field.
    let model = if doc.model.is_empty() { String::new() } else { format!(" · {}", esc(&doc.model)) };
    let _ = writeln!(
        o,
        "\n{}{} frontier{model} · {} ({} ran{sharing}, {}) · SLO {} · latencies at p{}",
        if doc.interrupted { "INTERRUPTED · " } else { "" },
        doc.source.as_str(),
        n(doc.configs.len(), "configuration"),
        ran,
        n(points, "point"),
        doc.slo.as_deref().map(esc).unwrap_or_else(|| "none".into()),
        doc.percentile
    );
    // The rows: the per-GPU frontier's points and, priced, the per-dollar
    // frontier's, from the fastest per user down; `front` says which.
    let on_gpu: HashSet<PointId> = doc.frontier.iter().copied().collect();
    let on_usd: HashSet<PointId> = doc.frontier_per_usd.iter().copied().collect();
    let mut rows: Vec<PointId> = on_gpu.union(&on_usd).copied().collect();
    let speed = |id: &PointId| doc.point(*id).and_then(|p| p.tokens_per_s_per_user).unwrap_or(f64::NEG_INFINITY);
    rows.sort_by(|a, b| speed(b).total_cmp(&speed(a)).then(a.cmp(b)));
    let priced = !on_usd.is_empty();
    let front = |id: &PointId| match (on_gpu.contains(id), on_usd.contains(id)) {
        (true, true) => "GPU $",
        (true, false) => "GPU",
        _ => "$",
    };
    let width = rows.iter().map(|id| doc.configs[id.config].id.chars().count()).max().unwrap_or(0).max(13);
    if priced {
        o.push_str(&format!("{:<6}", "front"));
    }
    let _ = writeln!(
        o,
        "{:<width$}  {:<16} {:>10} {:>10} {:>9} {:>8} {:>10} {:>6} {:>8} {:>8} {:>11}",
        "configuration",
        "load",
        "tok/s/GPU",
        "tok/s/user",
        "TTFT ms",
        "TPOT ms",
        "goodput",
        "SLO",
        "$ per M",
        "J/tok",
        "tok/s/MW",
    );
    for &id in &rows {
        let (c, p) = (&doc.configs[id.config], &doc.configs[id.config].points[id.point]);
        let best = if doc.best.as_ref().is_some_and(|b| b.at == id) { "  ← best" } else { "" };
        // A point not steady gives its window's rate: marked on its row, not
        // only in a note below the table (its row had read as any other).
        let unsteady = if p.steady == Some(false) { "  (not steady)" } else { "" };
        // A GPU the engine has no constants of its own for: its row had
        // read as sure as the others' (the notes alone said it).
        let uncalibrated = if doc.uncalibrated(c) { "  (uncalibrated GPU)" } else { "" };
        if priced {
            o.push_str(&format!("{:<6}", front(&id)));
        }
        let _ = writeln!(
            o,
            "{:<width$}  {:<16} {:>10} {:>10} {:>9} {:>8} {:>10} {:>6} {:>8} {:>8} {:>11}{best}{unsteady}{uncalibrated}",
            esc(&c.id),
            p.load.label(),
            num(Some(p.output_tokens_per_s_per_gpu), 0),
            num(p.tokens_per_s_per_user, 1),
            num(p.ttft_ms, 0),
            num(p.tpot_ms, 1),
            num(p.goodput_tokens_per_s, 0),
            verdict(p),
            num(p.usd_per_million_output_tokens, 3),
            // Three significant digits: two decimals had shown 0.07 and 0.08.
            p.joules_per_output_token.filter(|j| j.is_finite()).map_or_else(|| "-".into(), crate::format::joules),
            num(p.output_tokens_per_s_per_mw, 0),
        );
    }
    if priced {
        let _ = writeln!(
            o,
            "front: GPU on the frontier of output tokens/s per GPU, $ on that of output tokens per dollar (both \
             against tokens/s per user): a cheaper GPU can lose per GPU and win per dollar"
        );
    }
    match &doc.best {
        Some(b) => {
            let _ = writeln!(o, "\nbest: {}", esc(&b.reason));
            // A script's lines each escaped: its line breaks are its own
            // (a command's are escaped with the rest).
            if let Some(c) = doc.configs.get(b.at.config) {
                let script = c.serve_command.as_ref().is_some_and(|s| s.script);
                for line in
                    measure_line(c).iter().flat_map(|t| if script { t.lines().collect() } else { vec![t.as_str()] })
                {
                    let _ = writeln!(o, "{}", esc(line));
                }
            }
        }
        None => {
            let _ = writeln!(o, "\nbest: {}", goodput_core::doc::frontier::no_best_reason(doc));
        }
    }
    let off: Vec<_> = doc.configs.iter().filter_map(|c| c.dominated.as_ref().map(|d| (c, d))).collect();
    if !off.is_empty() {
        let _ = writeln!(o, "\noff the {}frontier:", if priced { "per-GPU " } else { "" });
        for (c, why) in off {
            let _ = writeln!(o, "  {}: {}", esc(&c.id), esc(why));
            if let Some(tail) = c.log_tail.as_deref().filter(|_| c.status == ConfigStatus::Failed) {
                for line in tail.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev() {
                    let _ = writeln!(o, "      | {}", esc(line));
                }
            }
        }
    }
    for n in &doc.notes {
        let _ = writeln!(o, "note: {}", esc(n));
    }
    o
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 27] = [
    "config",
    "gpu",
    "gpu_calibrated",
    "gpus",
    "gpu_hour_usd",
    "params",
    "status",
    "load_kind",
    "load",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "ttft_ms",
    "tpot_ms",
    "goodput_tokens_per_s",
    "meets_slo",
    "usd_per_million_output_tokens",
    "joules_per_output_token",
    "output_tokens_per_s_per_mw",
    "completed",
    "failed",
    "steady",
    "on_frontier",
    "on_frontier_per_usd",
    "best",
    "serve_command",
    "note",
];

/// A row per point of every configuration (one with an empty load for a
/// configuration that has none, a failed one's with its error in `note`);
/// `params` as `name=value` pairs joined by `;`. `status` is `ok`,
/// `failed`, or `shares_points` for one whose points are another's;
/// `on_frontier_per_usd` is empty when some configuration has no price;
/// `gpu_calibrated` is `false` on a predicted configuration whose GPU's
/// family the engine has no constants of its own for, `true` on the
/// other predicted ones, and empty on a measured one. `serve_command` is a
/// plan's `vllm serve …` for the configuration, empty where it has none.
pub fn csv(doc: &FrontierResult) -> String {
    let on: HashSet<PointId> = doc.frontier.iter().copied().collect();
    let on_usd: HashSet<PointId> = doc.frontier_per_usd.iter().copied().collect();
    // Empty where there is no per-dollar frontier (a configuration with no
    // price), not `false`.
    let priced = !on_usd.is_empty();
    let mut o = CSV_COLUMNS.join(",");
    o.push('\n');
    let flag = |b: Option<bool>| b.map_or(String::new(), |b| b.to_string());
    for (ci, c) in doc.configs.iter().enumerate() {
        let params = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
        // One whose points are another's ran none of its own: not plainly
        // "ok".
        let status = match c.status {
            ConfigStatus::Ok if c.points_of.is_some() => "shares_points",
            ConfigStatus::Ok => "ok",
            ConfigStatus::Failed => "failed",
        };
        let head = [
            csv_text(&c.id),
            csv_text(c.gpu.as_deref().unwrap_or("")),
            match doc.source {
                FrontierSource::Predicted => (!doc.uncalibrated(c)).to_string(),
                FrontierSource::Measured => String::new(),
            },
            c.gpus.to_string(),
            csv_num(c.gpu_hour_usd),
            csv_text(&params),
            status.into(),
        ];
        let note = csv_text(c.dominated.as_deref().unwrap_or(""));
        let command = csv_text(c.serve_command.as_ref().and_then(|s| s.command.as_deref()).unwrap_or(""));
        if c.points.is_empty() {
            let mut row = head.to_vec();
            row.extend(std::iter::repeat_n(String::new(), CSV_COLUMNS.len() - head.len() - 2));
            row.push(command.clone());
            row.push(note.clone());
            o.push_str(&row.join(","));
            o.push('\n');
        }
        for (pi, p) in c.points.iter().enumerate() {
            let id = PointId { config: ci, point: pi };
            let (kind, load) = match p.load {
                goodput_core::doc::sweep::Load::Concurrency(n) => ("concurrency", n as f64),
                goodput_core::doc::sweep::Load::Rate(r) => ("rate", r),
            };
            let mut row = head.to_vec();
            row.extend([
                kind.to_string(),
                csv_num(Some(load)),
                csv_num(Some(p.output_tokens_per_s)),
                csv_num(Some(p.output_tokens_per_s_per_gpu)),
                csv_num(p.tokens_per_s_per_user),
                csv_num(p.ttft_ms),
                csv_num(p.tpot_ms),
                csv_num(p.goodput_tokens_per_s),
                flag(p.meets_slo),
                csv_num(p.usd_per_million_output_tokens),
                csv_num(p.joules_per_output_token),
                csv_num(p.output_tokens_per_s_per_mw),
                p.completed.to_string(),
                p.failed.to_string(),
                flag(p.steady),
                on.contains(&id).to_string(),
                if priced { on_usd.contains(&id).to_string() } else { String::new() },
                doc.best.as_ref().is_some_and(|b| b.at == id).to_string(),
                command.clone(),
                // A point not steady says so (its `steady` column alone had
                // left the note empty), before its configuration's note.
                match (unsteady_note(p), c.dominated.as_deref()) {
                    (Some(u), Some(d)) => csv_text(&format!("{u}; {d}")),
                    (Some(u), None) => csv_text(&u),
                    (None, _) => note.clone(),
                },
            ]);
            o.push_str(&row.join(","));
            o.push('\n');
        }
    }
    o
}

/// A frontier in a report format, written to `dest`: JSON (the document),
/// CSV (`frontier.csv` in a folder, or the file itself when `dest` ends in
/// `.csv`), HTML (the page with its chart). Markdown is refused.
pub fn export(
    format: crate::Format,
    doc: &FrontierResult,
    dest: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, crate::ExportError> {
    use crate::{Format, Rendered};
    let rendered = match format {
        Format::Json => {
            let mut text = serde_json::to_vec_pretty(doc)?;
            text.push(b'\n');
            Rendered::File(text)
        }
        Format::Csv => Rendered::Folder(vec![(CSV_FILE.into(), csv(doc).into_bytes())]),
        Format::Html => Rendered::File(crate::export::html::frontier_page(doc)?.into_bytes()),
        Format::Markdown => return Err(crate::ExportError::Unsupported { what: "a frontier", format: "markdown" }),
    };
    rendered.write_to(dest)
}

/// The file `--csv` writes into its folder.
pub const CSV_FILE: &str = "frontier.csv";

/// How to start a predicted configuration on a real server, to measure it:
/// `to measure it: vllm serve …`, or why the server has no one command for
/// it.
pub fn measure_line(c: &goodput_core::doc::frontier::FrontierConfig) -> Option<String> {
    let sc = c.serve_command.as_ref()?;
    match (&sc.command, &sc.missing) {
        // A script (several servers, or TensorRT-LLM's options file
        // first): as a shell reads it pasted from here (the heredoc's end
        // at the start of its line).
        (Some(cmd), _) if sc.script => Some(format!(
            "to measure it: {}, started on port 8000 (a router there, where it is several servers) by this script \
             (plan --grid-out writes the sweep):\nPORT=8000 sh <<'EOF'\n{}\nEOF",
            sc.server_title(),
            cmd.trim_end()
        )),
        (Some(cmd), _) => Some(format!("to measure it: {cmd} --port 8000 (plan --grid-out writes the sweep)")),
        (None, Some(why)) => Some(format!("to measure it: {} has no one command for it: {why}", sc.server_title())),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::doc::config::Extra;
    use goodput_core::doc::frontier::{analyze_frontier, FrontierConfig, FrontierSource};
    use goodput_core::doc::result::Tool;
    use goodput_core::doc::sweep::Load;

    fn point(users: u64, x: f64, per_gpu: f64, gpus: u32) -> FrontierPoint {
        FrontierPoint {
            load: Load::Concurrency(users),
            output_tokens_per_s: per_gpu * f64::from(gpus),
            output_tokens_per_s_per_gpu: per_gpu,
            tokens_per_s_per_user: Some(x),
            ttft_ms: Some(500.0),
            tpot_ms: Some(1000.0 / x),
            goodput_tokens_per_s: Some(per_gpu * f64::from(gpus)),
            meets_slo: Some(true),
            usd_per_million_output_tokens: None,
            joules_per_output_token: None,
            output_tokens_per_s_per_mw: None,
            completed: 100,
            failed: 0,
            steady: None,
            client_stalled: None,
            spec_decode: None,
            extra: Extra::new(),
        }
    }

    /// The two-GPU plan: an H100 that loses to an H200 per GPU at each
    /// speed and wins per dollar, and (with `shares`) two batch limits
    /// whose points are the H100's.
    fn two_gpus(h200_price: Option<f64>, shares: bool) -> FrontierResult {
        let mut h100 = FrontierConfig::new("h100 tp8".into(), Default::default(), Some("H100".into()), 8, Some(2.5));
        h100.points = vec![point(64, 52.0, 1200.0, 8), point(256, 30.0, 2300.0, 8)];
        let mut h200 = FrontierConfig::new("h200 tp4x2".into(), Default::default(), Some("H200".into()), 8, h200_price);
        h200.points = vec![point(64, 52.0, 1300.0, 8), point(256, 30.0, 2500.0, 8)];
        let mut configs = vec![h100, h200];
        if shares {
            for seqs in ["16", "64"] {
                let mut c = FrontierConfig::new(format!("h100 tp8 seqs{seqs}"), Default::default(), None, 8, Some(2.5));
                c.points_of = Some("h100 tp8".into());
                configs.push(c);
            }
        }
        let mut d = FrontierResult {
            model: "m".into(),
            slo: Some("tpot:p95<=50ms".into()),
            configs,
            ..FrontierResult::new(
                Tool { name: "goodput".into(), version: "0".into(), commit: None },
                FrontierSource::Predicted,
                0.9,
                95.0,
            )
        };
        analyze_frontier(&mut d);
        d
    }

    /// Priced, the terminal lists the per-dollar frontier's points beside
    /// the per-GPU one's and says which each is on; the CSV has a column
    /// for it; the page draws a second chart and its table.
    #[test]
    fn the_per_dollar_frontier_is_shown_in_every_format() {
        let d = two_gpus(Some(3.2), false);
        let t = terminal(&d);
        let row = |id: &str, load: &str| {
            t.lines().find(|l| l.contains(id) && l.contains(load)).unwrap_or_else(|| panic!("no {id} {load} row:\n{t}"))
        };
        assert!(row("h100 tp8 ", "concurrency 64").starts_with("$ "), "{t}");
        assert!(row("h200 tp4x2", "concurrency 64").starts_with("GPU "), "{t}");
        assert!(t.contains("front: GPU on the frontier of output tokens/s per GPU, $ on that of"), "{t}");
        assert!(
            t.contains("off the per-GPU frontier:\n  h100 tp8: off the per-GPU frontier, on the per-dollar"),
            "{t}"
        );

        let rows = csv(&d);
        let head: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
        let col = head.iter().position(|c| *c == "on_frontier_per_usd").unwrap();
        let cells = |config: &str| -> Vec<String> {
            rows.lines().filter(|l| l.starts_with(config)).map(|l| l.split(',').nth(col).unwrap().to_string()).collect()
        };
        assert_eq!(cells("h100 tp8,"), ["true", "true"], "{rows}");
        assert_eq!(cells("h200 tp4x2,"), ["false", "false"], "{rows}");

        let page = crate::export::html::frontier_page(&d).unwrap();
        assert!(page.contains("Output tokens per dollar against tokens/s per user"));
        assert!(page.contains("<h2>The per-dollar frontier</h2>"));

        // One configuration unpriced: no per-dollar frontier anywhere.
        let d = two_gpus(None, false);
        assert!(!terminal(&d).lines().any(|l| l.starts_with("front")), "{}", terminal(&d));
        assert!(csv(&d).lines().skip(1).all(|l| l.split(',').nth(col) == Some("")), "{}", csv(&d));
        let page = crate::export::html::frontier_page(&d).unwrap();
        assert!(!page.contains("Output tokens per dollar against"));
    }

    /// A frontier point not steady says so in every format: the terminal
    /// "(not steady)" on its row, the CSV its note (its `steady` column
    /// alone had left the note empty), the page a tag beside its SLO
    /// verdict with the reason on hover (it had read plainly "met") and a
    /// dot drawn apart, faint and dotted, with a legend entry (it had been
    /// drawn as any other).
    /// The best configuration's command, or why its server has none, under
    /// the best's line in the terminal, and on the page.
    #[test]
    fn the_best_says_how_to_start_it() {
        use goodput_core::doc::frontier::ServeCommand;
        let mut d = two_gpus(Some(3.2), false);
        let best = d.best.as_ref().unwrap().at.config;
        let sc = |command: Option<&str>, missing: Option<&str>| ServeCommand {
            server: "sglang".into(),
            command: command.map(str::to_string),
            script: false,
            missing: missing.map(str::to_string),
        };
        d.configs[best].serve_command = Some(sc(None, Some("a drafter is needed")));
        let t = terminal(&d);
        assert!(t.contains("\nto measure it: SGLang has no one command for it: a drafter is needed\n"), "{t}");
        let page = crate::export::html::frontier_page(&d).unwrap();
        assert!(page.contains("To measure it: no one SGLang command: a drafter is needed"));
        d.configs[best].serve_command = Some(sc(Some("python3 -m sglang.launch_server --model-path m"), None));
        let t = terminal(&d);
        assert!(t.contains("\nto measure it: python3 -m sglang.launch_server --model-path m --port 8000"), "{t}");
        let rows = csv(&d);
        assert!(rows.contains(",python3 -m sglang.launch_server --model-path m,"), "{rows}");
        // Several servers: the script whole, as a shell reads it from the terminal, and on the page.
        let script = "port=${PORT:-8000}\nserve a &\nserve b &\nroute \"$port\"";
        d.configs[best].serve_command = Some(ServeCommand { script: true, ..sc(Some(script), None) });
        let t = terminal(&d);
        assert!(
            t.contains("by this script (plan --grid-out writes the sweep):\nPORT=8000 sh <<'EOF'\nport=${PORT:-8000}\nserve a &\nserve b &\nroute \"$port\"\nEOF\n"),
            "{t}"
        );
        let page = crate::export::html::frontier_page(&d).unwrap();
        assert!(page.contains("<pre class=\"serve-command\">port=${PORT:-8000}\nserve a &amp;\n"), "{page}");
        let rows = csv(&d);
        assert!(rows.contains(",\"port=${PORT:-8000}\nserve a &\n"), "{rows}");
    }

    #[test]
    fn a_point_not_steady_says_so_in_every_format() {
        let mut d = two_gpus(Some(3.2), false);
        let p = &mut d.configs[1].points[1];
        p.steady = Some(false);
        p.extra.insert("unsteady".into(), "mostly ramp-up and drain".into());
        analyze_frontier(&mut d);
        assert!(d.frontier.iter().any(|id| id.config == 1 && id.point == 1), "{:?}", d.frontier);
        let t = terminal(&d);
        assert!(t.lines().any(|l| l.contains("h200 tp4x2") && l.ends_with("(not steady)")), "{t}");

        let rows = csv(&d);
        let head: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
        assert_eq!(head.last(), Some(&"note"));
        let notes: Vec<&str> = rows.lines().filter(|l| l.starts_with("h200 tp4x2,")).collect();
        assert!(notes[1].ends_with(",not steady: mostly ramp-up and drain"), "{rows}");
        assert!(notes[0].ends_with(','), "a steady point's note is its configuration's: {rows}");

        let page = crate::export::html::frontier_page(&d).unwrap();
        assert!(
            page.contains(
                r#"<span class="tag marginal" title="not steady: mostly ramp-up and drain">not steady</span>"#
            ),
            "{page}"
        );
        // The H200's on the per-GPU chart; faint on the per-dollar one,
        // which the H100 wins.
        let drawn = page.matches(r#"class="pt c1 unsteady""#).count();
        let faint = page.matches(r#"class="pt c1 faint unsteady""#).count();
        assert_eq!((drawn, faint), (1, 1), "one a chart, per GPU and per dollar");
        assert!(page.contains("not steady (a burst&#39;s figures)") || page.contains("not steady (a burst's figures)"));
        assert!(page.contains("1 of the points is not steady"), "{page}");
    }

    /// Configurations whose points are another's are counted apart from
    /// those that ran (the header had said "3 ran" of one run), and the
    /// CSV does not call them plainly ok.
    #[test]
    fn configurations_that_share_points_are_not_counted_as_run() {
        let d = two_gpus(Some(3.2), true);
        let t = terminal(&d);
        assert!(t.contains("4 configurations (2 ran, 2 share another's points, 4 points)"), "{t}");
        let rows = csv(&d);
        let shared: Vec<&str> = rows.lines().filter(|l| l.starts_with("h100 tp8 seqs")).collect();
        assert_eq!(shared.len(), 2, "{rows}");
        let status = CSV_COLUMNS.iter().position(|c| *c == "status").unwrap();
        assert!(shared.iter().all(|l| l.split(',').nth(status) == Some("shares_points")), "{rows}");
        let mut d = d;
        d.configs.remove(1);
        analyze_frontier(&mut d);
        assert!(terminal(&d).contains("3 configurations (1 ran, 2 share its points, 2 points)"), "{}", terminal(&d));
    }
}
