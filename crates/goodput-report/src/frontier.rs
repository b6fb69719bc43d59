//! A frontier document (`goodput plan`, `sweep --serve-grid`) rendered: the
//! terminal's table of the frontier with the best point and why the other
//! configurations lost, a CSV with a row per point, and an HTML page with
//! the chart (tokens/s per user against output tokens/s per GPU).

use crate::escape::{csv_num, csv_text, terminal as esc};
use goodput_core::doc::frontier::{ConfigStatus, FrontierPoint, FrontierResult, PointId};
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

/// The document in the terminal: what was searched, the frontier's points
/// (from the fastest per GPU to the fastest per user), the best point, and
/// a line per configuration off the frontier. Text from the document passes
/// through `escape::terminal`.
pub fn terminal(doc: &FrontierResult) -> String {
    let mut o = String::new();
    let ran = doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok).count();
    let points: usize = doc.points().count();
    let n = |k: usize, what: &str| format!("{k} {what}{}", if k == 1 { "" } else { "s" });
    // No model when no configuration ran: left out, not an empty field.
    let model = if doc.model.is_empty() { String::new() } else { format!(" · {}", esc(&doc.model)) };
    let _ = writeln!(
        o,
        "\n{} frontier{model} · {} ({} ran, {}) · SLO {} · latencies at p{}",
        doc.source.as_str(),
        n(doc.configs.len(), "configuration"),
        ran,
        n(points, "point"),
        doc.slo.as_deref().map(esc).unwrap_or_else(|| "none".into()),
        doc.percentile
    );
    let width = doc.frontier.iter().map(|id| doc.configs[id.config].id.chars().count()).max().unwrap_or(0).max(13);
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
    for &id in doc.frontier.iter().rev() {
        let (c, p) = (&doc.configs[id.config], &doc.configs[id.config].points[id.point]);
        let best = if doc.best.as_ref().is_some_and(|b| b.at == id) { "  ← best" } else { "" };
        // A point not steady gives its window's rate: marked on its row, not
        // only in a note below the table (its row had read as any other).
        let unsteady = if p.steady == Some(false) { "  (not steady)" } else { "" };
        let _ = writeln!(
            o,
            "{:<width$}  {:<16} {:>10} {:>10} {:>9} {:>8} {:>10} {:>6} {:>8} {:>8} {:>11}{best}{unsteady}",
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
    match &doc.best {
        Some(b) => {
            let _ = writeln!(o, "\nbest: {}", esc(&b.reason));
        }
        None => {
            let _ = writeln!(o, "\nbest: {}", goodput_core::doc::frontier::no_best_reason(doc));
        }
    }
    let off: Vec<_> = doc.configs.iter().filter_map(|c| c.dominated.as_ref().map(|d| (c, d))).collect();
    if !off.is_empty() {
        let _ = writeln!(o, "\noff the frontier:");
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
pub const CSV_COLUMNS: [&str; 24] = [
    "config",
    "gpu",
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
    "best",
    "note",
];

/// A row per point of every configuration (one with an empty load for a
/// configuration that has none, a failed one's with its error in `note`);
/// `params` as `name=value` pairs joined by `;`.
pub fn csv(doc: &FrontierResult) -> String {
    let on: HashSet<PointId> = doc.frontier.iter().copied().collect();
    let mut o = CSV_COLUMNS.join(",");
    o.push('\n');
    let flag = |b: Option<bool>| b.map_or(String::new(), |b| b.to_string());
    for (ci, c) in doc.configs.iter().enumerate() {
        let params = c.params.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";");
        let status = match c.status {
            ConfigStatus::Ok => "ok",
            ConfigStatus::Failed => "failed",
        };
        let head = [
            csv_text(&c.id),
            csv_text(c.gpu.as_deref().unwrap_or("")),
            c.gpus.to_string(),
            csv_num(c.gpu_hour_usd),
            csv_text(&params),
            status.into(),
        ];
        let note = csv_text(c.dominated.as_deref().unwrap_or(""));
        if c.points.is_empty() {
            let mut row = head.to_vec();
            row.extend(std::iter::repeat_n(String::new(), CSV_COLUMNS.len() - head.len() - 1));
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
                doc.best.as_ref().is_some_and(|b| b.at == id).to_string(),
                note.clone(),
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
