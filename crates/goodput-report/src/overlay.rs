//! A predicted frontier beside a measured one (goodput-core's
//! `doc::overlay`, `goodput compare plan.json frontier.json`) rendered: the
//! terminal's table per paired configuration with the medians, a CSV with a
//! row per point and figure, Markdown with the medians, and (in
//! `export::html::overlay`) the page with both frontiers on one chart.

use crate::escape::{csv_num, csv_text, markdown as md, terminal as esc};
use goodput_core::doc::frontier::FrontierSource;
use goodput_core::doc::overlay::{Figure, FrontierComparison};
use goodput_core::doc::sweep::Load;
use std::fmt::Write;

fn kind_of(l: Load) -> &'static str {
    match l {
        Load::Concurrency(_) => "concurrency",
        Load::Rate(_) => "rate",
    }
}

/// A share as a signed percentage.
fn pct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".into(), |v| format!("{:+.1}%", v * 100.0))
}

fn apct(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

fn num(v: Option<f64>) -> String {
    match v.filter(|v| v.is_finite()) {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// A drafting configuration's drafts in a line: the verdict, and the
/// tokens a step predicted and measured where both are known.
pub fn drafts_line(d: &goodput_core::doc::overlay::DraftCheck) -> String {
    let lengths = match (d.predicted_accepted_length, d.measured_accepted_length) {
        (Some(p), Some(m)) => format!("; {p:.2} tokens a step predicted, {m:.2} measured"),
        _ => String::new(),
    };
    format!("{} draft tokens a step: {}{lengths}", d.tokens, d.verdict)
}

/// The comparison in the terminal: per pair, each measured point with each
/// figure's predicted and measured value and the error; the medians per
/// pair and overall; what is on one side only.
pub fn terminal(c: &FrontierComparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\npredicted ({}) against measured ({}) · {} configurations paired, {} on one side only",
        esc(&c.predicted_label),
        esc(&c.measured_label),
        c.pairs.len(),
        c.unmatched.len()
    );
    let _ = writeln!(o, "error = (predicted − measured) / measured; a figure's cells read predicted/measured error");
    for p in &c.pairs {
        let _ = writeln!(o, "\n{} ← predicted by {}", esc(&p.measured), esc(&p.predicted));
        let _ = write!(o, "  {:<18}", "load");
        for f in Figure::ALL {
            let _ = write!(o, " {:>26}", f.label());
        }
        o.push('\n');
        for pt in &p.points {
            let star = if pt.interpolated { "*" } else { "" };
            let _ = write!(o, "  {:<18}", format!("{}{star}", pt.load.label()));
            for v in &pt.figures {
                let cell = format!("{}/{} {}", num(v.predicted), num(v.measured), pct(v.error));
                let _ = write!(o, " {cell:>26}");
            }
            o.push('\n');
        }
        for u in &p.uncompared {
            let _ = writeln!(o, "  {:<18} not compared: {}", u.load.label(), esc(&u.reason));
        }
        let _ = write!(o, "  {:<18}", "median |error|");
        for s in &p.summary {
            let _ = write!(o, " {:>26}", apct(s.median_abs_error));
        }
        o.push('\n');
        if let Some(d) = &p.drafts {
            let _ = writeln!(o, "  drafts: {}", esc(&drafts_line(d)));
        }
    }
    if !c.pairs.is_empty() {
        let _ = writeln!(o, "\noverall (every compared point):");
        for s in &c.overall {
            let _ = writeln!(
                o,
                "  {:<12} median |error| {:>7}, median error {:>7}, over {} points",
                s.figure.label(),
                apct(s.median_abs_error),
                pct(s.median_error),
                s.points
            );
        }
    }
    if c.pairs.iter().any(|p| p.points.iter().any(|x| x.interpolated)) {
        let _ = writeln!(o, "* the prediction interpolated between the predicted loads around it");
    }
    if let Some(ch) = &c.choice {
        let _ = writeln!(o, "\nchoice: {}", esc(&ch.verdict));
    }
    if !c.unmatched.is_empty() {
        let _ = writeln!(o, "\non one side only:");
        for u in &c.unmatched {
            let _ = writeln!(o, "  {} {}: {}", u.source.as_str(), esc(&u.config), esc(&u.reason));
        }
    }
    for n in &c.notes {
        let _ = writeln!(o, "note: {}", esc(n));
    }
    o
}

/// The CSV file `--csv` writes into its folder.
pub const CSV_FILE: &str = "frontier_compare.csv";

/// A row per compared point and figure; a row per point not compared and
/// per configuration on one side only, with the reason in `note`.
pub fn csv(c: &FrontierComparison) -> String {
    let mut o = String::from(
        "measured_config,predicted_config,load_kind,load,load_per_replica,interpolated,figure,predicted,measured,\
         error,note\n",
    );
    for p in &c.pairs {
        for pt in &p.points {
            for v in &pt.figures {
                let _ = writeln!(
                    o,
                    "{},{},{},{},{},{},{},{},{},{},",
                    csv_text(&p.measured),
                    csv_text(&p.predicted),
                    kind_of(pt.load),
                    csv_num(Some(pt.load.value())),
                    csv_num(Some(pt.load_per_replica)),
                    pt.interpolated,
                    v.figure.key(),
                    csv_num(v.predicted),
                    csv_num(v.measured),
                    csv_num(v.error),
                );
            }
        }
        for u in &p.uncompared {
            let _ = writeln!(
                o,
                "{},{},{},{},,,,,,,{}",
                csv_text(&p.measured),
                csv_text(&p.predicted),
                kind_of(u.load),
                csv_num(Some(u.load.value())),
                csv_text(&format!("not compared: {}", u.reason))
            );
        }
    }
    for u in &c.unmatched {
        let (m, p) = match u.source {
            FrontierSource::Measured => (csv_text(&u.config), String::new()),
            FrontierSource::Predicted => (String::new(), csv_text(&u.config)),
        };
        let _ = writeln!(o, "{m},{p},,,,,,,,,{}", csv_text(&format!("{} only: {}", u.source.as_str(), u.reason)));
    }
    o
}

/// The medians per configuration and overall, and what is on one side
/// only, as Markdown.
pub fn markdown(c: &FrontierComparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### Predicted ({}) against measured ({})\n", md(&c.predicted_label), md(&c.measured_label));
    o.push_str("Median |error| of the prediction, error = (predicted − measured) / measured.\n\n");
    o.push_str("| measured | predicted by | points |");
    for f in Figure::ALL {
        let _ = write!(o, " {} |", f.label());
    }
    o.push_str("\n|---|---|---:|");
    o.push_str(&"---:|".repeat(Figure::ALL.len()));
    o.push('\n');
    for p in &c.pairs {
        let _ = write!(o, "| {} | {} | {} |", md(&p.measured), md(&p.predicted), p.points.len());
        for s in &p.summary {
            let _ = write!(o, " {} |", apct(s.median_abs_error));
        }
        o.push('\n');
    }
    let n: usize = c.pairs.iter().map(|p| p.points.len()).sum();
    let _ = write!(o, "| **overall** | | {n} |");
    for s in &c.overall {
        let _ = write!(o, " **{}** |", apct(s.median_abs_error));
    }
    o.push('\n');
    if let Some(ch) = &c.choice {
        let _ = writeln!(o, "\n**Choice:** {}", md(&ch.verdict));
    }
    for p in c.pairs.iter().filter(|p| p.drafts.is_some()) {
        if let Some(d) = &p.drafts {
            let _ = writeln!(o, "\n**Drafts of {}:** {}", md(&p.measured), md(&drafts_line(d)));
        }
    }
    if !c.unmatched.is_empty() {
        o.push_str("\nOn one side only:\n\n");
        for u in &c.unmatched {
            let _ = writeln!(o, "- {} **{}**: {}", u.source.as_str(), md(&u.config), md(&u.reason));
        }
    }
    for n in &c.notes {
        let _ = writeln!(o, "\n_{}_", md(n));
    }
    o
}

/// The comparison in a report format, written to `dest`.
pub fn export(
    format: crate::Format,
    c: &FrontierComparison,
    dest: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, crate::ExportError> {
    use crate::{Format, Rendered};
    let rendered = match format {
        Format::Json => {
            let mut text = serde_json::to_vec_pretty(c)?;
            text.push(b'\n');
            Rendered::File(text)
        }
        Format::Csv => Rendered::Folder(vec![(CSV_FILE.into(), csv(c).into_bytes())]),
        Format::Markdown => Rendered::File(markdown(c).into_bytes()),
        Format::Html => Rendered::File(crate::export::html::overlay_page(c)?.into_bytes()),
    };
    rendered.write_to(dest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::doc::config::Extra;
    use goodput_core::doc::frontier::{analyze_frontier, ConfigStatus, FrontierConfig, FrontierPoint, FrontierResult};
    use goodput_core::doc::overlay::compare_frontiers;
    use goodput_core::doc::result::Tool;

    type Configs<'a> = Vec<(&'a str, &'a str, Vec<(u64, f64)>)>;

    fn doc(source: FrontierSource, configs: Configs) -> FrontierResult {
        let point = |(users, tput): (u64, f64)| FrontierPoint {
            load: Load::Concurrency(users),
            output_tokens_per_s: tput,
            output_tokens_per_s_per_gpu: tput,
            tokens_per_s_per_user: Some(50.0),
            ttft_ms: Some(20.0),
            tpot_ms: Some(20.0),
            goodput_tokens_per_s: None,
            meets_slo: None,
            usd_per_million_output_tokens: None,
            joules_per_output_token: None,
            output_tokens_per_s_per_mw: None,
            completed: 10,
            failed: 0,
            steady: None,
            client_stalled: None,
            spec_decode: None,
            extra: Extra::new(),
        };
        let configs = configs
            .into_iter()
            .map(|(id, seqs, pts)| FrontierConfig {
                id: id.into(),
                params: [("max_num_seqs".to_string(), seqs.to_string())].into_iter().collect(),
                gpu: None,
                gpus: 1,
                gpu_hour_usd: None,
                status: ConfigStatus::Ok,
                error: None,
                exit_status: None,
                log_tail: None,
                dominated: None,
                exited_during: None,
                points_of: None,
                serve_command: None,
                points: pts.into_iter().map(point).collect(),
                extra: Extra::new(),
            })
            .collect();
        let mut d = FrontierResult {
            model: "m".into(),
            configs,
            ..FrontierResult::new(Tool { name: "goodput".into(), version: "0".into(), commit: None }, source, 0.9, 50.0)
        };
        analyze_frontier(&mut d);
        d
    }

    #[test]
    fn the_renderings_give_each_point_the_medians_and_what_is_on_one_side() {
        let pred = doc(
            FrontierSource::Predicted,
            vec![("p4", "4", vec![(1, 100.0), (4, 300.0)]), ("p8", "8", vec![(1, 100.0)])],
        );
        let meas = doc(
            FrontierSource::Measured,
            vec![("seqs=4", "4", vec![(1, 80.0), (2, 200.0)]), ("seqs=16", "16", vec![(1, 90.0)])],
        );
        let c = compare_frontiers(("plan.json", pred), ("frontier.json", meas));
        let t = terminal(&c);
        assert!(t.contains("seqs=4 ← predicted by p4") && t.contains("100/80.0 +25.0%"), "{t}");
        assert!(t.contains("concurrency 2*") && t.contains("measured seqs=16: no predicted"), "{t}");
        let rows = csv(&c);
        // A row per point and figure, then one per configuration on one side.
        assert_eq!(rows.lines().count(), 1 + 2 * 4 + 2, "{rows}");
        assert!(rows.contains("seqs=4,p4,concurrency,1,1,false,output_tokens_per_s_per_gpu,100,80,0.25,"), "{rows}");
        let m = markdown(&c);
        assert!(m.contains("| seqs=4 | p4 | 2 |") && m.contains("| **overall** | | 2 |"), "{m}");
    }
}
