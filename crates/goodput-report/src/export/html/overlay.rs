//! The predicted frontier beside the measured one (`goodput compare
//! plan.json frontier.json --html`): one chart with each paired
//! configuration's measured curve (solid) and predicted curve (dashed, the
//! same colour), both Pareto frontiers, then the per-point errors, the
//! medians per configuration and overall, and what is on one side only.

use super::{card, charts, footer, header, page};
use crate::escape::html;
use crate::export::ExportError;
use crate::svg::{Chart, Series, Style};
use goodput_core::doc::frontier::{plane, FrontierPoint, FrontierResult};
use goodput_core::doc::overlay::{predicted_points, Figure, FrontierComparison};
use std::fmt::Write;

/// Paired configurations drawn in their own colour; the rest share one.
const OWN_COLOURS: usize = 5;

pub fn overlay_page(c: &FrontierComparison) -> Result<String, ExportError> {
    // Whole, whatever its size: the two frontiers have no records to leave out.
    let data = serde_json::to_string(c)?;
    let mut o = String::new();
    let title = format!("predicted against measured · {}", c.measured.model);
    let lines = vec![
        format!(
            "predicted: {} ({} configurations) · measured: {} ({} configurations) · {} paired",
            html(&c.predicted_label),
            c.predicted.configs.len(),
            html(&c.measured_label),
            c.measured.configs.len(),
            c.pairs.len()
        ),
        "error = (predicted − measured) / measured: positive where the prediction was too high".into(),
    ];
    header(&mut o, "frontier comparison", &title, &lines);
    o.push_str("</header><main><section class=\"cards\">");
    for s in &c.overall {
        card(
            &mut o,
            &format!("{} median |error|", html(s.figure.label())),
            &s.median_abs_error.map_or_else(|| "-".into(), |e| format!("{:.1}%", e * 100.0)),
            &format!(
                "signed median {} · {} points",
                s.median_error.map_or_else(|| "-".into(), |e| format!("{:+.1}%", e * 100.0)),
                s.points
            ),
        );
    }
    o.push_str("</section>");
    // Whether the measurement would choose what the prediction chose: the
    // decision the comparison is for, said before the figures' errors.
    if let Some(ch) = &c.choice {
        let _ = write!(o, r#"<p class="note choice">Choice: {}</p>"#, html(&ch.verdict));
    }
    // The assumption a drafting prediction rests on, checked.
    for p in &c.pairs {
        if let Some(d) = &p.drafts {
            let line = crate::overlay::drafts_line(d);
            let _ = write!(o, r#"<p class="note drafts">Drafts of {}: {}</p>"#, html(&p.measured), html(&line));
        }
    }
    charts(&mut o, &[chart(c)]);
    medians(&mut o, c);
    points(&mut o, c);
    if !c.unmatched.is_empty() {
        o.push_str("<section><h2>On one side only</h2><ul>");
        for u in &c.unmatched {
            let _ = write!(o, "<li>{} <b>{}</b>: {}</li>", u.source.as_str(), html(&u.config), html(&u.reason));
        }
        o.push_str("</ul></section>");
    }
    if !c.notes.is_empty() {
        o.push_str("<section><h2>Notes</h2><ul>");
        for n in &c.notes {
            let _ = write!(o, "<li>{}</li>", html(n));
        }
        o.push_str("</ul></section>");
    }
    o.push_str("</main>");
    footer(&mut o, &c.measured.tool, &c.schema);
    Ok(page("frontier-compare", &format!("goodput {title}"), &o, &data))
}

/// A configuration's points on the plane, and which of them miss the SLO
/// (drawn hollow).
type Curve = (Vec<(f64, f64)>, Vec<bool>);

fn on_plane(points: &[FrontierPoint]) -> Curve {
    points.iter().filter_map(|p| plane(p).map(|xy| (xy, p.meets_slo == Some(false)))).unzip()
}

fn curve(doc: &FrontierResult, id: &str) -> Curve {
    doc.configs.iter().find(|c| c.id == id).map_or_else(Curve::default, |c| on_plane(&c.points))
}

/// A series of `curve`'s points, those that miss the SLO hollow.
fn curve_series(name: String, color: usize, (points, misses): Curve, dashed: bool) -> Series {
    let mut s = Series::new(name, Style::LineDots, color, points);
    s.misses = misses;
    s.dashed = dashed;
    s
}

fn chart(c: &FrontierComparison) -> Chart {
    let mut series = Vec::new();
    let shared = c.pairs.len() > OWN_COLOURS + 1;
    let mut rest_m = Series::new("other measured configurations", Style::Dots, 5, Vec::new());
    let mut rest_p = Series::new("their predictions", Style::Dots, 5, Vec::new());
    rest_p.dashed = true;
    for (i, p) in c.pairs.iter().enumerate() {
        let (m, q) = (curve(&c.measured, &p.measured), predicted_curve(c, &p.predicted));
        if shared && i >= OWN_COLOURS {
            for (rest, (points, misses)) in [(&mut rest_m, m), (&mut rest_p, q)] {
                rest.points.extend(points);
                rest.misses.extend(misses);
            }
            continue;
        }
        series.push(curve_series(format!("{} measured", p.measured), i, m, false));
        series.push(curve_series(format!("{} predicted", p.measured), i, q, true));
    }
    for s in [rest_m, rest_p] {
        if !s.points.is_empty() {
            series.push(s);
        }
    }
    for (doc, name, dashed) in
        [(&c.predicted, "predicted Pareto frontier", true), (&c.measured, "measured Pareto frontier", false)]
    {
        let front: Vec<(f64, f64)> = doc.frontier.iter().filter_map(|&id| doc.point(id).and_then(plane)).collect();
        if !front.is_empty() {
            let mut s = Series::new(name, Style::Line, Series::INK, front);
            s.dashed = dashed;
            series.push(s);
        }
    }
    let misses = series.iter().any(|s| s.misses.contains(&true));
    Chart {
        id: "frontier-compare".into(),
        title: "Output tokens/s per GPU against tokens/s per user: predicted (dashed) and measured (solid)".into(),
        x_label: "tokens/s per user (1000 / TPOT)".into(),
        y_label: "output tokens/s per GPU".into(),
        series,
        note: Some(
            "Each paired configuration in one colour: its measured curve solid, its predicted curve dashed. The ink \
             lines are the two Pareto frontiers over every configuration of each document."
                .to_string()
                + if misses { " A hollow point misses the SLO." } else { "" },
        ),
        ..Chart::default()
    }
}

/// The points a predicted configuration is drawn with: its own, or, for a
/// batch limit plan did not simulate again, the widest limit's up to its own.
fn predicted_curve(c: &FrontierComparison, id: &str) -> Curve {
    c.predicted
        .configs
        .iter()
        .position(|p| p.id == id)
        .map_or_else(Curve::default, |i| on_plane(&predicted_points(&c.predicted, i)))
}

fn pctcell(v: Option<f64>, signed: bool) -> String {
    match v.filter(|v| v.is_finite()) {
        None => "-".into(),
        Some(v) if signed => {
            let class = if v.abs() <= 0.1 { "better" } else { "worse" };
            format!(r#"<span class="{class}">{:+.1}%</span>"#, v * 100.0)
        }
        Some(v) => format!("{:.1}%", v * 100.0),
    }
}

fn num(v: Option<f64>) -> String {
    match v.filter(|v| v.is_finite()) {
        None => "-".into(),
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.1}"),
    }
}

fn medians(o: &mut String, c: &FrontierComparison) {
    o.push_str(
        "<section><h2>Median |error| per configuration</h2><div class=\"scroll\"><table><thead><tr><th>measured</th>\
         <th>predicted by</th><th>points</th>",
    );
    for f in Figure::ALL {
        let _ = write!(o, "<th>{}</th>", html(f.label()));
    }
    o.push_str("</tr></thead><tbody>");
    for p in &c.pairs {
        let _ =
            write!(o, "<tr><td>{}</td><td>{}</td><td>{}</td>", html(&p.measured), html(&p.predicted), p.points.len());
        for s in &p.summary {
            let _ = write!(o, "<td>{}</td>", pctcell(s.median_abs_error, false));
        }
        o.push_str("</tr>");
    }
    let n: usize = c.pairs.iter().map(|p| p.points.len()).sum();
    let _ = write!(o, "<tr><td><b>overall</b></td><td></td><td>{n}</td>");
    for s in &c.overall {
        let _ = write!(o, "<td><b>{}</b></td>", pctcell(s.median_abs_error, false));
    }
    o.push_str("</tr></tbody></table></div></section>");
}

fn points(o: &mut String, c: &FrontierComparison) {
    o.push_str(
        "<section><h2>Per point</h2><p class=\"note\">Each cell: predicted / measured, and the error. A load marked * \
         was read between two predicted loads (linear interpolation).</p><div class=\"scroll\"><table><thead><tr>\
         <th>measured</th><th>load</th>",
    );
    for f in Figure::ALL {
        let _ = write!(o, "<th>{}</th>", html(f.label()));
    }
    o.push_str("</tr></thead><tbody>");
    for p in &c.pairs {
        for pt in &p.points {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}{}</td>",
                html(&p.measured),
                html(&pt.load.label()),
                if pt.interpolated { "*" } else { "" }
            );
            for v in &pt.figures {
                let _ = write!(o, "<td>{} / {} {}</td>", num(v.predicted), num(v.measured), pctcell(v.error, true));
            }
            o.push_str("</tr>");
        }
        for u in &p.uncompared {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td colspan=\"{}\">not compared: {}</td></tr>",
                html(&p.measured),
                html(&u.load.label()),
                Figure::ALL.len(),
                html(&u.reason)
            );
        }
    }
    o.push_str("</tbody></table></div></section>");
}
