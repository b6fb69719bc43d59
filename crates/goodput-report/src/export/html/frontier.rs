//! The frontier page (`goodput plan`, `sweep --serve-grid`): the chart of
//! every configuration's points, output tokens/s per GPU against tokens/s
//! per user, with the Pareto frontier drawn and its points labelled; the
//! best point; the frontier's table; why each other configuration lost, and
//! the failed ones with their logs.

use super::{card, charts, counted, embed, footer, header, page};
use crate::escape::html;
use crate::export::ExportError;
use crate::svg::{Chart, Mark, Series, Style};
use goodput_core::doc::frontier::{plane, ConfigStatus, FrontierPoint, FrontierResult, PointId};
use std::collections::HashSet;
use std::fmt::Write;

/// With more configurations than this, those with no point on the frontier
/// share one muted series (the legend would be longer than the chart).
const OWN_COLOURS: usize = 6;

/// A frontier as a page.
pub fn frontier_page(doc: &FrontierResult) -> Result<String, ExportError> {
    let (data, _) = embed(doc, || doc)?;
    let mut o = String::new();
    let title = match doc.model.as_str() {
        "" => format!("{} frontier", doc.source.as_str()),
        m => format!("{} frontier · {m}", doc.source.as_str()),
    };
    let mut lines = vec![format!(
        "{} · SLO {} · TTFT, TPOT and tokens/s per user at p{}",
        counted(doc.configs.len() as u64, "configuration"),
        html(doc.slo.as_deref().unwrap_or("none")),
        doc.percentile
    )];
    if let Some(w) = workload_line(doc) {
        lines.push(html(&w));
    }
    header(&mut o, "frontier", &title, &lines);
    o.push_str("</header><main><section class=\"cards\">");
    best_cards(&mut o, doc);
    o.push_str("</section>");
    if let Some(b) = &doc.best {
        let _ = write!(o, r#"<p class="note">Best: {}</p>"#, html(&b.reason));
    }
    charts(&mut o, &[chart(doc)]);
    frontier_table(&mut o, doc);
    off_the_frontier(&mut o, doc);
    if !doc.notes.is_empty() {
        o.push_str("<section><h2>Notes</h2><ul>");
        for n in &doc.notes {
            let _ = write!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul></section>");
    }
    o.push_str("</main>");
    footer(&mut o, &doc.tool, &doc.schema);
    Ok(page("frontier", &format!("goodput {title}"), &o, &data))
}

fn workload_line(doc: &FrontierResult) -> Option<String> {
    let w = &doc.workload;
    let mut parts = Vec::new();
    if let Some(p) = &w.preset {
        parts.push(format!("preset {p}"));
    }
    if let Some(i) = &w.input_tokens {
        parts.push(format!("input {i} tokens"));
    }
    if let Some(o) = &w.output_tokens {
        parts.push(format!("output {o} tokens"));
    }
    if let Some(t) = &w.trace {
        parts.push(format!("trace of {} requests", t.requests));
    }
    if let Some(d) = &w.dataset {
        parts.push(format!("dataset {d}"));
    }
    (!parts.is_empty()).then(|| format!("workload: {}", parts.join(", ")))
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

fn best_cards(o: &mut String, doc: &FrontierResult) {
    let Some(b) = &doc.best else {
        let why = goodput_core::doc::frontier::no_best_reason(doc);
        card(o, "best", "none", why);
        return;
    };
    let (c, p) = (&doc.configs[b.at.config], &doc.configs[b.at.config].points[b.at.point]);
    card(o, "best configuration", &html(&c.id), &html(&p.load.label()));
    card(o, "output tok/s per GPU", &fmt(Some(p.output_tokens_per_s_per_gpu), 0), &counted(c.gpus.into(), "GPU"));
    card(o, "tok/s per user", &fmt(p.tokens_per_s_per_user, 1), &format!("TPOT {} ms", fmt(p.tpot_ms, 1)));
    card(o, "TTFT", &format!("{} ms", fmt(p.ttft_ms, 0)), &format!("p{}", doc.percentile));
    if let Some(u) = p.usd_per_million_output_tokens {
        card(o, "$ per M output tokens", &crate::format::usd(u), "");
    }
    if let Some(j) = p.joules_per_output_token {
        card(
            o,
            "J per output token",
            &crate::format::joules(j),
            &format!("{} tok/s per MW", fmt(p.output_tokens_per_s_per_mw, 0)),
        );
    }
}

fn tip(doc: &FrontierResult, id: PointId, p: &FrontierPoint) -> String {
    let c = &doc.configs[id.config];
    let slo = match p.meets_slo {
        Some(true) => " · meets the SLO",
        Some(false) => " · misses the SLO",
        None => "",
    };
    format!(
        "{} · {} · {} tok/s/GPU · {} tok/s/user · TTFT {} ms{slo}",
        c.id,
        p.load.label(),
        fmt(Some(p.output_tokens_per_s_per_gpu), 0),
        fmt(p.tokens_per_s_per_user, 1),
        fmt(p.ttft_ms, 0)
    )
}

/// Every configuration's curve, the frontier through the best of them,
/// the frontier's points labelled and the best ringed.
fn chart(doc: &FrontierResult) -> Chart {
    let on: HashSet<usize> = doc.frontier.iter().map(|p| p.config).collect();
    let ran: Vec<usize> = (0..doc.configs.len()).filter(|&i| doc.configs[i].status == ConfigStatus::Ok).collect();
    let best = doc.best.as_ref().map(|b| b.at.config);
    let own = |i: usize| ran.len() <= OWN_COLOURS || on.contains(&i) || best == Some(i);
    let mut series = Vec::new();
    let mut others = Series::new("other configurations", Style::Dots, 5, Vec::new());
    // Six colours: the muted series takes the last when there is one.
    let shared = ran.iter().any(|&i| !own(i));
    let slots = if shared { 5 } else { 6 };
    let mut colour = 0;
    for &ci in &ran {
        let c = &doc.configs[ci];
        let pts: Vec<(PointId, (f64, f64), &FrontierPoint)> = c
            .points
            .iter()
            .enumerate()
            .filter_map(|(pi, p)| plane(p).map(|xy| (PointId { config: ci, point: pi }, xy, p)))
            .collect();
        if pts.is_empty() {
            continue;
        }
        if own(ci) {
            // Past the colours it may use, a configuration takes them again
            // in another line pattern: no two curves look alike.
            let slot = colour % slots + colour / slots * 6;
            let mut s = Series::new(&c.id, Style::LineDots, slot, pts.iter().map(|p| p.1).collect());
            s.tips = pts.iter().map(|&(id, _, p)| tip(doc, id, p)).collect();
            series.push(s);
            colour += 1;
        } else {
            others.points.extend(pts.iter().map(|p| p.1));
            others.tips.extend(pts.iter().map(|&(id, _, p)| tip(doc, id, p)));
        }
    }
    if !others.points.is_empty() {
        series.push(others);
    }
    let front: Vec<(f64, f64)> = doc.frontier.iter().filter_map(|&id| doc.point(id).and_then(plane)).collect();
    if !front.is_empty() {
        let mut s = Series::new("Pareto frontier", Style::Line, Series::INK, front);
        s.dashed = true;
        series.push(s);
    }
    let mut marks = Vec::new();
    let mut note_rings = "";
    // The best's configuration is labelled at the best point alone (it had
    // a second ring, at another of its frontier points, under its bare name).
    let mut labelled: HashSet<usize> = doc.best.iter().map(|b| b.at.config).collect();
    for &id in &doc.frontier {
        let Some((x, y)) = doc.point(id).and_then(plane) else { continue };
        // Each configuration once, at its frontier point of most
        // throughput (the legend lists every label).
        if !labelled.insert(id.config) {
            continue;
        }
        marks.push(Mark { x, y, label: doc.configs[id.config].id.clone(), class: "mark-sat" });
    }
    if let Some(b) = &doc.best {
        if let Some((x, y)) = doc.point(b.at).and_then(plane) {
            marks.push(Mark { x, y, label: format!("best: {}", doc.configs[b.at.config].id), class: "mark-rec" });
        }
    }
    if marks.iter().any(|m| m.class == "mark-sat") {
        // Their legend entries are the curves' own (see `Chart::render`).
        note_rings = " A ring marks a configuration's frontier point of most throughput, labelled with its name.";
    }
    let misses = doc.points().filter(|(_, p)| p.meets_slo == Some(false)).count();
    let mut note = format!(
        "Each curve is one configuration at rising load (right to left: more users, less speed each). The dashed line \
         is the Pareto frontier: no point beats one of its points on both axes. Tokens/s per user is 1000 / TPOT p{}.",
        doc.percentile
    );
    note.push_str(note_rings);
    if misses > 0 {
        let _ = write!(note, " {misses} of the points miss the SLO (hover a point to see which).");
    }
    Chart {
        id: "frontier".into(),
        title: "Output tokens/s per GPU against tokens/s per user".into(),
        x_label: "tokens/s per user (1000 / TPOT)".into(),
        y_label: "output tokens/s per GPU".into(),
        series,
        marks,
        note: Some(note),
        ..Chart::default()
    }
}

fn frontier_table(o: &mut String, doc: &FrontierResult) {
    o.push_str(
        "<section><h2>The frontier</h2><div class=\"scroll\"><table><thead><tr><th>configuration</th><th>load</th>\
         <th>tok/s/GPU</th><th>tok/s/user</th><th>TTFT (ms)</th><th>TPOT (ms)</th><th>goodput tok/s</th><th>SLO</th>\
         <th>$ per M</th>",
    );
    // Energy only where the engine or the server gave it.
    let energy = doc.frontier.iter().filter_map(|&id| doc.point(id)).any(|p| p.joules_per_output_token.is_some());
    if energy {
        o.push_str("<th>J/token</th><th>tok/s per MW</th>");
    }
    o.push_str("<th>GPUs</th></tr></thead><tbody>");
    for &id in doc.frontier.iter().rev() {
        let (c, p) = (&doc.configs[id.config], &doc.configs[id.config].points[id.point]);
        let best =
            if doc.best.as_ref().is_some_and(|b| b.at == id) { r#" <span class="tag info">best</span>"# } else { "" };
        let slo = match p.meets_slo {
            Some(true) => r#"<span class="better">met</span>"#,
            Some(false) => r#"<span class="worse">missed</span>"#,
            None => "-",
        };
        let _ = write!(
            o,
            "<tr><td>{}{best}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{slo}</td>\
             <td>{}</td>",
            html(&c.id),
            html(&p.load.label()),
            fmt(Some(p.output_tokens_per_s_per_gpu), 0),
            fmt(p.tokens_per_s_per_user, 1),
            fmt(p.ttft_ms, 0),
            fmt(p.tpot_ms, 1),
            fmt(p.goodput_tokens_per_s, 0),
            fmt(p.usd_per_million_output_tokens, 3),
        );
        if energy {
            let _ = write!(
                o,
                "<td>{}</td><td>{}</td>",
                p.joules_per_output_token.filter(|j| j.is_finite()).map_or_else(|| "-".into(), crate::format::joules),
                fmt(p.output_tokens_per_s_per_mw, 0)
            );
        }
        let _ = write!(
            o,
            "<td>{}{}</td></tr>",
            c.gpus,
            c.gpu.as_deref().map(|g| format!(" × {}", html(g))).unwrap_or_default()
        );
    }
    o.push_str("</tbody></table></div></section>");
}

fn off_the_frontier(o: &mut String, doc: &FrontierResult) {
    let off: Vec<_> = doc.configs.iter().filter(|c| c.dominated.is_some()).collect();
    if off.is_empty() {
        return;
    }
    o.push_str("<section><h2>Off the frontier</h2><ul>");
    for c in off {
        let _ = write!(o, "<li><b>{}</b>: {}", html(&c.id), html(c.dominated.as_deref().unwrap_or("")));
        if c.status == ConfigStatus::Failed {
            if let Some(s) = c.exit_status {
                let _ = write!(o, " (exit status {s})");
            }
            if let Some(t) = &c.log_tail {
                let _ = write!(o, r#"<pre class="config">{}</pre>"#, html(t));
            }
        }
        o.push_str("</li>");
    }
    o.push_str("</ul></section>");
}
