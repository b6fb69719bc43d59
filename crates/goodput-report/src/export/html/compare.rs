//! The compare page.

use super::{cdf_chart, charts, footer, header, page};
use crate::compare::{mark, Comparison, Verdict};
use crate::escape::html;
use crate::export::ExportError;
use crate::format;
use crate::metric::Better;
use crate::series::Latency;
use crate::svg::{swatch, Chart};
use goodput_core::RunResult;
use std::fmt::Write;

/// A comparison as a page, with the runs' distributions overlaid.
pub fn compare_page(c: &Comparison, runs: &[&RunResult]) -> Result<String, ExportError> {
    let data = serde_json::to_string(c)?;
    let mut o = String::new();
    let lines: Vec<String> = c
        .labels
        .iter()
        .zip(runs)
        .enumerate()
        .map(|(i, (l, r))| {
            format!(
                r#"{}{} <b>{}</b> · {} · {} · {} {}"#,
                swatch(i, false),
                if i == 0 { "baseline" } else { "run" },
                label_html(l, i),
                html(&r.target.model),
                html(&r.target.url),
                html(&r.kind),
                format::started(r.started_unix_s)
            )
        })
        .collect();
    let mut lines = lines;
    if let Some(n) = &c.note {
        lines.push(format!("note: {}", html(n)));
    }
    header(&mut o, "comparison", &format!("{} runs compared", c.labels.len()), &lines);
    if !c.verdicts.is_empty() {
        o.push_str(r#"<div class="verdicts">"#);
        for v in &c.verdicts {
            let (cls, word) = match v.verdict {
                Verdict::Pass => ("pass", "pass"),
                Verdict::Fail => ("fail", "FAIL"),
                Verdict::Unjudged => ("fail", "UNJUDGED"),
            };
            let _ = write!(
                o,
                r#"<span class="pill {cls}">{} on {} · {} · {word}</span>"#,
                html(&v.rule),
                c.labels.get(v.run).map_or_else(|| "?".to_string(), |l| label_html(l, v.run)),
                html(&v.reason)
            );
        }
        o.push_str("</div>");
    }
    o.push_str(r#"</header><main><section><h2>Metrics</h2><div class="scroll"><table class="compare"><thead><tr><th>metric</th>"#);
    for (i, l) in c.labels.iter().enumerate() {
        let _ = write!(o, "<th>{}</th>", label_html(l, i));
        if i > 0 {
            o.push_str("<th>change</th>");
        }
    }
    o.push_str("</tr></thead><tbody>");
    for row in &c.rows {
        let _ = write!(o, "<tr><td>{}</td>", html(&row.label));
        for (i, v) in row.values.iter().enumerate() {
            let _ = write!(o, "<td>{}</td>", format::value(*v, row.unit));
            if i > 0 {
                let ch = row.changes[i];
                let cls = match mark(row.better, ch) {
                    " +" => "better",
                    " !" => "worse",
                    _ => "",
                };
                let sig = crate::compare::significance_mark(row.significance.get(i).and_then(Option::as_ref));
                let _ = write!(o, r#"<td class="{cls}">{}{sig}</td>"#, row.change_text(i));
            }
        }
        o.push_str("</tr>");
    }
    if !c.slo.is_empty() {
        let _ = write!(o, "<tr><td>{}</td>", crate::compare::SLO_VERDICT);
        for (i, s) in c.slo.iter().enumerate() {
            let cls = match s.pass {
                Some(true) => "better",
                Some(false) => "worse",
                None => "",
            };
            let _ = write!(o, r#"<td class="{cls}">{}</td>"#, s.verdict_text());
            if i > 0 {
                o.push_str("<td></td>");
            }
        }
        o.push_str("</tr>");
    }
    o.push_str("</tbody></table></div>");
    let _ = write!(
        o,
        r#"<p class="note">Change is relative to the baseline; <span class="better">green</span> is better, <span class="worse">red</span> worse{}.</p></section>"#,
        if c.rows.iter().any(|r| r.better == Better::Neither) { " (uncoloured: neither way is better)" } else { "" }
    );
    if c.rows.iter().any(|r| r.significance.iter().any(Option::is_some)) {
        let _ = write!(o, r#"<p class="note">{}.</p>"#, html(crate::compare::SIGNIFICANCE_LEGEND));
    }
    let slo = crate::compare::slo_lines(c);
    if let Some((head, each)) = slo.split_first() {
        let _ = write!(o, r#"<section><h2>SLO</h2><p class="note">{}</p><ul>"#, html(head));
        for l in each {
            let _ = write!(o, "<li>{}</li>", html(l));
        }
        o.push_str("</ul></section>");
    }
    if !c.answers.is_empty() {
        o.push_str(r#"<section><h2>Answers</h2><p class="note">On the same prompts as the baseline: change, 95% paired interval.</p><ul>"#);
        for a in &c.answers {
            let label = c.labels.get(a.run).map_or_else(|| "?".to_string(), |l| label_html(l, a.run));
            let _ = write!(o, "<li>{label}: {}</li>", html(&crate::compare::answers_line(a)));
        }
        o.push_str("</ul></section>");
    }
    if !c.differences.is_empty() {
        o.push_str(r#"<section><h2>Settings that differ</h2><div class="scroll"><table class="compare"><thead><tr><th>setting</th>"#);
        for (i, l) in c.labels.iter().enumerate() {
            let _ = write!(o, "<th>{}</th>", label_html(l, i));
        }
        o.push_str("</tr></thead><tbody>");
        for d in &c.differences {
            let _ = write!(o, "<tr><td><code>{}</code></td>", html(&d.path));
            for v in &d.values {
                let _ = write!(o, "<td>{}</td>", html(v));
            }
            o.push_str("</tr>");
        }
        o.push_str("</tbody></table></div></section>");
    }
    let labelled: Vec<(String, &RunResult)> =
        c.labels.iter().enumerate().map(|(i, l)| label_text(l, i)).zip(runs.iter().copied()).collect();
    let cdfs: Vec<Chart> =
        Latency::ALL.iter().map(|&m| cdf_chart(&format!("{}-cdf", m.id()), m, &labelled, Vec::new())).collect();
    o.push_str(r#"<section><h2>Distributions</h2>"#);
    charts(&mut o, &cdfs);
    o.push_str("</section></main>");
    if let Some(r) = runs.first() {
        footer(&mut o, &r.tool, &r.schema);
    }
    Ok(page("compare", &format!("goodput compare · {} runs", c.labels.len()), &o, &data))
}

/// The most characters of a run's label a header shows; a longer one is cut
/// there with an ellipsis, its whole text in a tooltip, so a table's column
/// (which does not wrap) stays as wide as its figures.
const LABEL_CHARS: usize = 48;

/// Run `i`'s label as shown: a blank one named by its place (`run 1` is the
/// baseline), a long one cut to [`LABEL_CHARS`] with an ellipsis.
fn label_text(label: &str, i: usize) -> String {
    if label.trim().is_empty() {
        format!("run {}", i + 1)
    } else if label.chars().count() <= LABEL_CHARS {
        label.to_string()
    } else {
        let mut cut: String = label.chars().take(LABEL_CHARS - 1).collect();
        cut.push('…');
        cut
    }
}

/// [`label_text`] as HTML, a cut label's whole text in a `title`.
fn label_html(label: &str, i: usize) -> String {
    let shown = label_text(label, i);
    if shown.ends_with('…') && shown != label {
        format!(r#"<span title="{}">{}</span>"#, html(label), html(&shown))
    } else {
        html(&shown)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::run;
    use super::*;

    fn page_of(labels: &[&str]) -> String {
        let runs: Vec<RunResult> = labels.iter().map(|_| run(8, false).0).collect();
        let refs: Vec<(&str, &RunResult)> = labels.iter().copied().zip(&runs).collect();
        let c = crate::compare::compare(&refs, &[]);
        compare_page(&c, &runs.iter().collect::<Vec<_>>()).unwrap()
    }

    /// The metrics table's column heads.
    fn heads(html: &str) -> Vec<String> {
        let table = html.split(r#"<table class="compare"><thead><tr><th>metric</th>"#).nth(1).unwrap();
        let row = table.split("</tr>").next().unwrap();
        row.split("<th>").skip(1).map(|h| h.trim_end_matches("</th>").to_string()).filter(|h| h != "change").collect()
    }

    /// A blank label is named by the run's place; a long one is cut with an
    /// ellipsis, its whole text in a tooltip, so the column stays narrow.
    #[test]
    fn blank_and_long_labels_head_their_columns_readably() {
        let long = "x".repeat(3000);
        let html = page_of(&["", &long]);
        let heads = heads(&html);
        assert_eq!(heads[0], "run 1");
        assert!(heads[1].starts_with(r#"<span title="xxx"#) && heads[1].ends_with("x…</span>"), "{}", heads[1]);
        assert_eq!(heads[1].matches('x').count(), 3000 + LABEL_CHARS - 1);
        assert!(!html.contains("<b></b>") && html.contains("<b>run 1</b>"));
        // The legends name the runs as the table does.
        assert!(!html.contains(&format!("</svg>{long}</span>")));
    }

    /// Twelve runs: each header swatch in a style of its own, the same as
    /// its curves' in the charts.
    #[test]
    fn every_run_has_a_swatch_of_its_own() {
        let labels: Vec<String> = (0..12).map(|i| format!("r{i}")).collect();
        let html = page_of(&labels.iter().map(String::as_str).collect::<Vec<_>>());
        let header = html.split("</header>").next().unwrap();
        let swatches: Vec<&str> =
            header.split(r#"<svg class="sw""#).skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
        assert_eq!(swatches.len(), 12);
        let distinct: std::collections::HashSet<&&str> = swatches.iter().collect();
        assert_eq!(distinct.len(), 12, "{swatches:?}");
        let chart = html.split(r#"data-chart="ttft-cdf""#).nth(1).unwrap();
        for (i, s) in swatches.iter().enumerate() {
            let cls = s.split(r#"class="line "#).nth(1).unwrap().split('"').next().unwrap();
            assert!(
                chart.contains(&format!(r#"<polyline class="line {cls}" points="1,4 23,4"/></svg>r{i}<"#)),
                "{cls}"
            );
        }
    }
}
