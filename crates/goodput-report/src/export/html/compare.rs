//! The compare page.

use super::{cdf_chart, charts, footer, header, page};
use crate::compare::{mark, Comparison, Verdict};
use crate::escape::html;
use crate::export::ExportError;
use crate::format;
use crate::metric::Better;
use crate::series::Latency;
use crate::svg::Chart;
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
                r#"<i class="sw c{}"></i>{} <b>{}</b> · {} · {} · {} {}"#,
                i % 6,
                if i == 0 { "baseline" } else { "run" },
                html(l),
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
                html(c.labels.get(v.run).map(String::as_str).unwrap_or("?")),
                html(&v.reason)
            );
        }
        o.push_str("</div>");
    }
    o.push_str(r#"</header><main><section><h2>Metrics</h2><div class="scroll"><table class="compare"><thead><tr><th>metric</th>"#);
    for (i, l) in c.labels.iter().enumerate() {
        let _ = write!(o, "<th>{}</th>", html(l));
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
                let _ = write!(o, r#"<td class="{cls}">{}{sig}</td>"#, format::change(ch));
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
    if !c.answers.is_empty() {
        o.push_str(r#"<section><h2>Answers</h2><p class="note">On the same prompts as the baseline: change, 95% paired interval.</p><ul>"#);
        for a in &c.answers {
            let label = c.labels.get(a.run).map_or("?", |l| l.as_str());
            let _ = write!(o, "<li>{}: {}</li>", html(label), html(&crate::compare::answers_line(a)));
        }
        o.push_str("</ul></section>");
    }
    if !c.differences.is_empty() {
        o.push_str(r#"<section><h2>Settings that differ</h2><div class="scroll"><table class="compare"><thead><tr><th>setting</th>"#);
        for l in &c.labels {
            let _ = write!(o, "<th>{}</th>", html(l));
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
    let labelled: Vec<(String, &RunResult)> = c.labels.iter().cloned().zip(runs.iter().copied()).collect();
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
