//! The frontier page (`goodput plan`, `sweep --serve-grid`): the chart of
//! every configuration's points, output tokens/s per GPU against tokens/s
//! per user, with the Pareto frontier drawn and its points labelled (and,
//! when the configurations are priced apart, a second chart of output tokens per
//! dollar with its own frontier); the best point; the frontiers' tables; why
//! each other configuration lost, and the failed ones with their logs.

use super::{card, charts, counted, footer, header, page};
use crate::escape::html;
use crate::export::ExportError;
use crate::svg::{Chart, Mark, Series, Style};
use goodput_core::doc::frontier::{plane, plane_per_usd, ConfigStatus, FrontierPoint, FrontierResult, PointId};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

/// With more configurations than this, those with no point on the frontier
/// share one muted series (the legend would be longer than the chart):
/// where the configurations name no GPU type (a measured grid's).
const OWN_COLOURS: usize = 6;

/// The GPU types a chart colours its points by, in the order the document
/// first names them (a plan's `--gpu` order): each configuration's `gpu`,
/// of those with points. Empty where one of them names none (a measured
/// grid's): its configurations then take a colour each.
fn gpu_types(doc: &FrontierResult) -> Vec<&str> {
    let mut types: Vec<&str> = Vec::new();
    for c in doc.configs.iter().filter(|c| c.status == ConfigStatus::Ok && !c.points.is_empty()) {
        match c.gpu.as_deref() {
            Some(g) if !types.contains(&g) => types.push(g),
            Some(_) => {}
            None => return Vec::new(),
        }
    }
    types
}

/// A GPU type's style slot: its place among the plan's types, which picks
/// the six colours in turn (Okabe–Ito's, told apart in the common colour
/// blindnesses), then again in the other line patterns.
fn gpu_slot(k: usize) -> usize {
    k
}

/// A frontier as a page.
pub fn frontier_page(doc: &FrontierResult) -> Result<String, ExportError> {
    // Whole, whatever its size: a frontier has no records to leave out.
    let data = serde_json::to_string(doc)?;
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
        if let Some(c) = doc.configs.get(b.at.config) {
            let server = c.serve_command.as_ref().map_or("", |s| s.server_title());
            match c.serve_command.as_ref().map(|s| (s.command.as_deref(), s.missing.as_deref())) {
                Some((Some(cmd), _)) if c.serve_command.as_ref().is_some_and(|s| s.script) => {
                    let _ = write!(
                        o,
                        r#"<p class="note">To measure it: {}, started on port 8000 (a router there, where it is several servers) by this script saved to a file and run as <code>PORT=8000 sh FILE</code> (<code>plan --grid-out</code> writes the frontier's configurations and the sweep that measures them):</p><pre class="serve-command">{}</pre>"#,
                        html(server),
                        html(cmd)
                    );
                }
                Some((Some(cmd), _)) => {
                    let _ = write!(
                        o,
                        r#"<p class="note">To measure it: <code class="serve-command">{} --port 8000</code> (<code>plan --grid-out</code> writes the frontier's configurations and the sweep that measures them)</p>"#,
                        html(cmd)
                    );
                }
                Some((None, Some(why))) => {
                    let _ = write!(
                        o,
                        r#"<p class="note">To measure it: no one {} command: {}</p>"#,
                        html(server),
                        html(why)
                    );
                }
                _ => {}
            }
        }
    }
    // Priced, a second chart: the cheapest per token at each speed, where a
    // cheaper GPU that loses per GPU can win.
    let (per_gpu, gpu_keys) = chart(doc, Per::Gpu);
    let mut drawn = vec![per_gpu];
    let mut usd_keys = HashMap::new();
    if !doc.frontier_per_usd.is_empty() {
        let (per_usd, keys) = chart(doc, Per::Usd);
        drawn.push(per_usd);
        usd_keys = keys;
    }
    charts(&mut o, &drawn);
    frontier_table(&mut o, doc, &gpu_keys);
    per_usd_table(&mut o, doc, &usd_keys);
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
    if let Some(s) = &doc.sessions {
        let turns = match s.turns.as_str() {
            "all" => "each conversation's own turns".to_string(),
            t => format!("{t} turns"),
        };
        parts.push(format!("sessions of {turns}, {} think time", s.think_time));
    }
    (!parts.is_empty()).then(|| format!("workload: {}", parts.join(", ")))
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// A whole number with its thousands grouped (`1,090,935`), as the page's
/// other large figures read; `-` where there is none.
fn grouped(v: Option<f64>) -> String {
    match v.filter(|v| v.is_finite()) {
        Some(v) if v >= 0.0 && v < u64::MAX as f64 => goodput_core::util::thousands(v.round() as u64),
        v => fmt(v, 0),
    }
}

fn best_cards(o: &mut String, doc: &FrontierResult) {
    let Some(b) = &doc.best else {
        let why = goodput_core::doc::frontier::no_best_reason(doc);
        card(o, "best", "none", why);
        return;
    };
    let (c, p) = (&doc.configs[b.at.config], &doc.configs[b.at.config].points[b.at.point]);
    // On an uncalibrated GPU the card that names it says so, where the
    // choice is read first (the line below the cards says why).
    let sub = match doc.uncalibrated(c) {
        true => format!("{} · uncalibrated GPU: measure it before choosing it", p.load.label()),
        false => p.load.label(),
    };
    card(o, "best configuration", &html(&c.id), &html(&sub));
    card(o, "output tok/s per GPU", &grouped(Some(p.output_tokens_per_s_per_gpu)), &counted(c.gpus.into(), "GPU"));
    card(o, "tok/s per user", &fmt(p.tokens_per_s_per_user, 1), &format!("TPOT {} ms", fmt(p.tpot_ms, 1)));
    // A predicted TTFT whose accuracy the notes give is pointed to them
    // where it is read first.
    let caveat = if doc.notes.iter().any(|n| n.starts_with(goodput_core::doc::frontier::TTFT_ACCURACY_NOTE)) {
        " · predicted: under load the engine's least certain figure (Notes)"
    } else {
        ""
    };
    card(o, "TTFT", &format!("{} ms", grouped(p.ttft_ms)), &format!("p{}{caveat}", doc.percentile));
    if let Some(u) = p.usd_per_million_output_tokens {
        card(o, "$ per M output tokens", &crate::format::usd(u), "");
    }
    // A plan of sessions or a trace: what the prefix caches served there.
    if let Some(rate) = p.extra.get(goodput_core::doc::frontier::PREFIX_CACHE_HIT_RATE).and_then(|v| v.as_f64()) {
        card(o, "prefix cache", &format!("{:.0} %", rate * 100.0), "of the prompt tokens, served from the cache");
    }
    if let Some(j) = p.joules_per_output_token {
        card(
            o,
            "J per output token",
            &crate::format::joules(j),
            &format!("{} tok/s per MW", grouped(p.output_tokens_per_s_per_mw)),
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
    let per_usd = match c.tokens_per_usd(p).filter(|_| !doc.frontier_per_usd.is_empty()) {
        Some(v) => format!(" · {} tokens per $", goodput_core::doc::frontier::count(v)),
        None => String::new(),
    };
    let uncalibrated = if doc.uncalibrated(c) { " · uncalibrated GPU" } else { "" };
    format!(
        "{} · {} · {} tok/s/GPU · {} tok/s/user{per_usd} · TTFT {} ms{slo}{uncalibrated}",
        c.id,
        p.load.label(),
        grouped(Some(p.output_tokens_per_s_per_gpu)),
        fmt(p.tokens_per_s_per_user, 1),
        grouped(p.ttft_ms)
    )
}

/// What a chart's y is: output tokens/s per GPU, or output tokens per
/// dollar (every configuration priced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Per {
    Gpu,
    Usd,
}

impl Per {
    /// The point's place on this chart's plane.
    fn at(self, doc: &FrontierResult, id: PointId) -> Option<(f64, f64)> {
        match self {
            Per::Gpu => doc.point(id).and_then(plane),
            Per::Usd => plane_per_usd(doc, id),
        }
    }

    /// The frontier this chart draws.
    fn frontier(self, doc: &FrontierResult) -> &[PointId] {
        match self {
            Per::Gpu => &doc.frontier,
            Per::Usd => &doc.frontier_per_usd,
        }
    }
}

/// The frontier points a chart rings, each configuration once at its
/// frontier point of most throughput (the best's configuration at the best
/// point alone: it is ringed there), numbered from 1 in the order of rising
/// tokens/s per user: the key a ring takes when its name has no room, which
/// the table then shows beside the row (see [`chart`]).
fn ring_keys(doc: &FrontierResult, per: Per) -> Vec<(PointId, usize)> {
    let mut labelled: HashSet<usize> = doc.best.iter().map(|b| b.at.config).collect();
    let mut out = Vec::new();
    for &id in per.frontier(doc) {
        if per.at(doc, id).is_some() && labelled.insert(id.config) {
            out.push((id, out.len() + 1));
        }
    }
    out
}

/// A point as a chart draws it: its id, its place on the chart's plane,
/// its figures.
type Placed<'a> = (PointId, (f64, f64), &'a FrontierPoint);

/// `from`'s points, with their tips and verdicts, added to `into`.
fn absorb(into: &mut Series, from: Series) {
    into.points.extend(from.points);
    into.tips.extend(from.tips);
    into.misses.extend(from.misses);
    into.unsteady.extend(from.unsteady);
}

/// Every configuration's curve, the frontier through the best of them,
/// the frontier's points labelled and the best ringed: per GPU, or per
/// dollar. Points that miss the SLO are drawn hollow, their rings dashed.
/// With it, the rings the chart labels by their number rather than their
/// name (where the name had no room): the keys its table may show, and
/// only those (it had tagged every ringed row "ring N" where the chart
/// showed names alone).
fn chart(doc: &FrontierResult, per: Per) -> (Chart, HashMap<PointId, usize>) {
    let on: HashSet<usize> = per.frontier(doc).iter().map(|p| p.config).collect();
    let ran: Vec<usize> = (0..doc.configs.len()).filter(|&i| doc.configs[i].status == ConfigStatus::Ok).collect();
    let best = doc.best.as_ref().map(|b| b.at.config);
    let gpus = gpu_types(doc);
    // Each configuration's points on this chart.
    let drawn: Vec<(usize, Vec<Placed>)> = ran
        .iter()
        .map(|&ci| {
            let pts = doc.configs[ci]
                .points
                .iter()
                .enumerate()
                .filter_map(|(pi, p)| {
                    let id = PointId { config: ci, point: pi };
                    per.at(doc, id).map(|xy| (id, xy, p))
                })
                .collect::<Vec<_>>();
            (ci, pts)
        })
        .filter(|(_, pts)| !pts.is_empty())
        .collect();
    let curve = |name: &str, style: Style, slot: usize, pts: &[Placed]| {
        let mut s = Series::new(name, style, slot, pts.iter().map(|p| p.1).collect());
        s.tips = pts.iter().map(|&(id, _, p)| tip(doc, id, p)).collect();
        s.misses = pts.iter().map(|p| misses(p.2)).collect();
        s.unsteady = pts.iter().map(|p| p.2.steady == Some(false)).collect();
        s
    };
    let mut series = Vec::new();
    // Whether some configuration's points are drawn faint (by GPU type).
    let mut off = false;
    // The style slot each configuration's curve (and its ring) is drawn in.
    let mut slot_of: HashMap<usize, usize> = HashMap::new();
    if gpus.is_empty() {
        let own = |i: usize| ran.len() <= OWN_COLOURS || on.contains(&i) || best == Some(i);
        let mut others = Series::new("other configurations", Style::Dots, 5, Vec::new());
        // Six colours: the muted series takes the last when there is one.
        let shared = drawn.iter().any(|&(i, _)| !own(i));
        let slots = if shared { 5 } else { 6 };
        let mut colour = 0;
        for (ci, pts) in &drawn {
            if own(*ci) {
                // Past the colours it may use, a configuration takes them again
                // in another line pattern: no two curves look alike.
                let slot = colour % slots + colour / slots * 6;
                series.push(curve(&doc.configs[*ci].id, Style::LineDots, slot, pts));
                slot_of.insert(*ci, slot);
                colour += 1;
            } else {
                absorb(&mut others, curve("", Style::Dots, 5, pts));
            }
        }
        if !others.points.is_empty() {
            series.push(others);
        }
    } else {
        // By GPU type: the legend names each type in its colour; the
        // configurations on the frontier (and the best's) are drawn as
        // curves in their type's colour, named by their rings; the others'
        // points faint beneath them, one series a type, without curves.
        // Every configuration drawn names one of `gpus`.
        let kind = |ci: usize| gpus.iter().position(|&g| Some(g) == doc.configs[ci].gpu.as_deref()).unwrap_or(0);
        for (k, g) in gpus.iter().enumerate() {
            // An uncalibrated GPU's colour says so in the legend (its curves
            // had been drawn as sure as the others').
            let name = if doc.uncalibrated_gpus.iter().any(|u| u == g) {
                format!("{g} (uncalibrated)")
            } else {
                g.to_string()
            };
            series.push(Series::new(name, Style::LineDots, gpu_slot(k), Vec::new()));
        }
        let mut faint: Vec<Series> = (0..gpus.len())
            .map(|k| {
                let mut s = Series::new(format!("{} off the frontier", gpus[k]), Style::Dots, gpu_slot(k), Vec::new());
                s.faint = true;
                s.legend = false;
                s
            })
            .collect();
        let mut curves = Vec::new();
        for (ci, pts) in &drawn {
            let (k, slot) = (kind(*ci), gpu_slot(kind(*ci)));
            if on.contains(ci) || best == Some(*ci) {
                let mut s = curve(&doc.configs[*ci].id, Style::LineDots, slot, pts);
                s.legend = false;
                curves.push(s);
                slot_of.insert(*ci, slot);
            } else {
                absorb(&mut faint[k], curve("", Style::Dots, slot, pts));
            }
        }
        // Beneath the curves, the faint points; the legend says what
        // they are once, in ink.
        off = faint.iter().any(|f| !f.points.is_empty());
        series.extend(faint.into_iter().filter(|f| !f.points.is_empty()));
        series.extend(curves);
        if off {
            let mut s = Series::new("off the frontier", Style::Dots, Series::INK, Vec::new());
            s.faint = true;
            series.push(s);
        }
    }
    let front: Vec<(f64, f64)> = per.frontier(doc).iter().filter_map(|&id| per.at(doc, id)).collect();
    if !front.is_empty() {
        let mut s = Series::new("Pareto frontier", Style::Line, Series::INK, front);
        s.dashed = true;
        series.push(s);
    }
    let mut marks = Vec::new();
    // The best's configuration is labelled at the best point alone (it had
    // a second ring, at another of its frontier points, under its bare name).
    let rings = ring_keys(doc, per);
    for &(id, key) in &rings {
        let Some((x, y)) = per.at(doc, id) else { continue };
        let label = doc.configs[id.config].id.clone();
        let missed = doc.point(id).is_some_and(misses);
        let unsteady = doc.point(id).is_some_and(|p| p.steady == Some(false));
        let color = slot_of.get(&id.config).copied();
        marks.push(Mark { x, y, label, class: "mark-sat", key: Some(key.to_string()), missed, unsteady, color });
    }
    if let Some(b) = &doc.best {
        if let Some((x, y)) = per.at(doc, b.at) {
            let label = format!("best: {}", doc.configs[b.at.config].id);
            // Where its name has no room near its ring, "best" there: the
            // cards and the line above the chart name it (it had been put
            // lines away, on the plot's top edge, with a long leader).
            let missed = doc.point(b.at).is_some_and(misses);
            // Never a point not steady (plan chooses none). In ink where
            // the colours are the configurations' or GPU types', so it reads
            // as none of them.
            let color = Some(Series::INK);
            marks.push(Mark {
                x,
                y,
                label,
                class: "mark-rec",
                key: Some("best".into()),
                missed,
                unsteady: false,
                color,
            });
        }
    }
    let uncalibrated: Vec<&str> = doc
        .uncalibrated_gpus
        .iter()
        .map(String::as_str)
        .filter(|g| drawn.iter().any(|(ci, _)| doc.configs[*ci].gpu.as_deref() == Some(*g)))
        .collect();
    let missed = doc.points().filter(|&(id, p)| misses(p) && per.at(doc, id).is_some()).count();
    let unsteady = doc.points().filter(|&(id, p)| p.steady == Some(false) && per.at(doc, id).is_some()).count();
    let mut note = if gpus.is_empty() {
        "Each curve is one configuration at rising load (right to left: more users, less speed each).".to_string()
    } else {
        format!(
            "Colours are GPU types ({}). Each curve is a configuration with a point on the frontier, at rising load \
             (right to left: more users, less speed each){}.",
            gpus.join(", "),
            if off { "; the faint dots are the points of the configurations off it" } else { "" }
        )
    };
    let _ = write!(
        note,
        " The dashed line is the Pareto frontier: no point beats one of its points on both axes. Tokens/s per user is \
         1000 / TPOT p{}.",
        doc.percentile
    );
    if !uncalibrated.is_empty() {
        let _ = write!(
            note,
            " {} {} uncalibrated{}: the engine runs {} on another family's constants, so {} points, and how they stand \
             against the others', can be far off (the notes below say by how much where it is known).",
            uncalibrated.join(", "),
            if uncalibrated.len() == 1 { "is" } else { "are" },
            if gpus.is_empty() { "" } else { " (so marked in the legend)" },
            if uncalibrated.len() == 1 { "it" } else { "them" },
            if uncalibrated.len() == 1 { "its" } else { "their" },
        );
    }
    if per == Per::Usd {
        note.push_str(
            " Output tokens per dollar is output tokens/s × 3600 over the configuration's price per hour (its GPUs' \
             price per GPU-hour × its GPUs): at the speed the product needs, the highest point is the cheapest per \
             token, whatever its throughput per GPU.",
        );
    }
    if missed > 0 {
        let _ = write!(
            note,
            " {} the SLO: drawn hollow, a ring around one dashed (hover a point to see its figures).",
            if missed == 1 { "1 of the points misses".to_string() } else { format!("{missed} of the points miss") }
        );
    }
    if unsteady > 0 {
        let _ = write!(
            note,
            " {} not steady (the run measured no steady state, so its figures are a burst's, not a rate the \
             configuration holds): drawn faint with a dotted outline, its ring dotted, and marked \"not steady\" in \
             the tables.",
            if unsteady == 1 { "1 of the points is".to_string() } else { format!("{unsteady} of the points are") }
        );
    }
    let (id, title, y_label) = match per {
        Per::Gpu => ("frontier", "Output tokens/s per GPU against tokens/s per user", "output tokens/s per GPU"),
        Per::Usd => ("frontier-usd", "Output tokens per dollar against tokens/s per user", "output tokens per dollar"),
    };
    let mut chart = Chart {
        id: id.into(),
        title: title.into(),
        x_label: "tokens/s per user (1000 / TPOT)".into(),
        y_label: y_label.into(),
        series,
        marks,
        ..Chart::default()
    };
    // The marks are the rings in `rings`' order, then the best's.
    let keyed = chart.keyed_marks();
    let shown: HashMap<PointId, usize> =
        rings.iter().zip(&keyed).filter(|(_, &k)| k).map(|(&(id, key), _)| (id, key)).collect();
    if !rings.is_empty() {
        // Their legend entries are the curves' own (see `Chart::render`).
        note.push_str(" A ring marks a configuration's frontier point of most throughput, labelled with its name");
        if !gpus.is_empty() {
            note.push_str(" in its GPU type's colour");
        }
        note.push_str(if shown.is_empty() {
            "."
        } else {
            "; where the name has no room beside it, with a number, the ring's number in the table below."
        });
    }
    chart.note = Some(note);
    (chart, shown)
}

/// A point's SLO cell: met or missed and, for a point not steady, a tag
/// saying so, its reason (a trace plan's) on hover: its figures are a
/// burst's, and its row had read as plainly met.
fn slo_cell(p: &FrontierPoint) -> String {
    let verdict = match p.meets_slo {
        Some(true) => r#"<span class="better">met</span>"#,
        Some(false) => r#"<span class="worse">missed</span>"#,
        None => "-",
    };
    match crate::frontier::unsteady_note(p) {
        Some(note) => format!(r#"{verdict} <span class="tag marginal" title="{}">not steady</span>"#, html(&note)),
        None => verdict.to_string(),
    }
}

/// Whether a point was judged and missed the SLO.
fn misses(p: &FrontierPoint) -> bool {
    p.meets_slo == Some(false)
}

/// The per-GPU frontier's points, from the fastest per user down; `keys`:
/// the rings the chart numbers (see [`chart`]).
fn frontier_table(o: &mut String, doc: &FrontierResult, keys: &HashMap<PointId, usize>) {
    o.push_str(
        "<section><h2>The frontier</h2><div class=\"scroll\"><table class=\"frontier\"><thead><tr>\
         <th>configuration</th><th>load</th><th>tok/s/GPU</th><th>tok/s/user</th><th>TTFT (ms)</th><th>TPOT (ms)</th>\
         <th>goodput tok/s</th><th>SLO</th><th>$&nbsp;per&nbsp;M</th>",
    );
    // Energy only where the engine or the server gave it.
    let energy = doc.frontier.iter().filter_map(|&id| doc.point(id)).any(|p| p.joules_per_output_token.is_some());
    if energy {
        o.push_str("<th>J/token</th><th>tok/s per MW</th>");
    }
    o.push_str("<th>GPUs</th></tr></thead><tbody>");
    for &id in doc.frontier.iter().rev() {
        let (c, p) = (&doc.configs[id.config], &doc.configs[id.config].points[id.point]);
        let mut best = keys.get(&id).map_or_else(String::new, |k| format!(r#" <span class="tag">ring {k}</span>"#));
        if doc.best.as_ref().is_some_and(|b| b.at == id) {
            best.push_str(r#" <span class="tag info">best</span>"#);
        }
        if doc.uncalibrated(c) {
            best.push_str(r#" <span class="tag marginal" title="the engine has no constants of its own for this GPU's family: measure it before choosing it">uncalibrated GPU</span>"#);
        }
        let slo = slo_cell(p);
        let _ = write!(
            o,
            "<tr><td><span class=\"nw\">{}</span>{best}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{}</td><td>{slo}</td><td>{}</td>",
            html(&c.id),
            html(&p.load.label()),
            grouped(Some(p.output_tokens_per_s_per_gpu)),
            fmt(p.tokens_per_s_per_user, 1),
            grouped(p.ttft_ms),
            fmt(p.tpot_ms, 1),
            grouped(p.goodput_tokens_per_s),
            fmt(p.usd_per_million_output_tokens, 3),
        );
        if energy {
            let _ = write!(
                o,
                "<td>{}</td><td>{}</td>",
                p.joules_per_output_token.filter(|j| j.is_finite()).map_or_else(|| "-".into(), crate::format::joules),
                grouped(p.output_tokens_per_s_per_mw)
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

/// The per-dollar frontier's points, from the fastest per user down, with
/// the tokens a dollar buys at each: where the per-GPU frontier's table
/// leaves out a cheaper GPU that wins per token.
fn per_usd_table(o: &mut String, doc: &FrontierResult, keys: &HashMap<PointId, usize>) {
    if doc.frontier_per_usd.is_empty() {
        return;
    }
    o.push_str(
        "<section><h2>The per-dollar frontier</h2><p class=\"note\">The most output tokens per dollar at each \
         speed per user; <i>per GPU</i> marks a point that is on the per-GPU frontier too.</p><div \
         class=\"scroll\"><table class=\"frontier\"><thead><tr><th>configuration</th><th>load</th>\
         <th>tok/s/user</th><th>output tokens per $</th><th>$&nbsp;per&nbsp;M</th><th>tok/s/GPU</th><th>SLO</th>\
         <th>GPUs</th></tr></thead><tbody>",
    );
    let on_gpu: HashSet<PointId> = doc.frontier.iter().copied().collect();
    for &id in doc.frontier_per_usd.iter().rev() {
        let (c, p) = (&doc.configs[id.config], &doc.configs[id.config].points[id.point]);
        let mut tags = keys.get(&id).map_or_else(String::new, |k| format!(r#" <span class="tag">ring {k}</span>"#));
        if doc.best.as_ref().is_some_and(|b| b.at == id) {
            tags.push_str(r#" <span class="tag info">best</span>"#);
        }
        if on_gpu.contains(&id) {
            tags.push_str(r#" <span class="tag">per GPU</span>"#);
        }
        if doc.uncalibrated(c) {
            tags.push_str(r#" <span class="tag marginal" title="the engine has no constants of its own for this GPU's family: measure it before choosing it">uncalibrated GPU</span>"#);
        }
        let slo = slo_cell(p);
        let _ = write!(
            o,
            "<tr><td><span class=\"nw\">{}</span>{tags}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td>{slo}</td><td>{}{}</td></tr>",
            html(&c.id),
            html(&p.load.label()),
            fmt(p.tokens_per_s_per_user, 1),
            c.tokens_per_usd(p).map_or_else(|| "-".into(), goodput_core::doc::frontier::count),
            fmt(p.usd_per_million_output_tokens, 3),
            grouped(Some(p.output_tokens_per_s_per_gpu)),
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
    let per_gpu = if doc.frontier_per_usd.is_empty() { "" } else { "per-GPU " };
    let _ = write!(o, "<section><h2>Off the {per_gpu}frontier</h2><ul>");
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

#[cfg(test)]
mod tests {
    use super::{grouped, workload_line};
    use goodput_core::doc::config::SessionsConfig;
    use goodput_core::doc::frontier::{FrontierResult, FrontierSource};

    /// The workload line names a plan's sessions, a dataset's own turns
    /// as such.
    #[test]
    fn the_workload_line_names_the_sessions() {
        let tool = goodput_core::doc::result::Tool { name: "goodput".into(), version: "0".into(), commit: None };
        let mut doc = FrontierResult::new(tool, FrontierSource::Predicted, 0.9, 50.0);
        doc.workload.input_tokens = Some("200".into());
        assert_eq!(workload_line(&doc).unwrap(), "workload: input 200 tokens");
        doc.sessions = Some(SessionsConfig { turns: "5".into(), think_time: "exponential:5s".into() });
        assert_eq!(
            workload_line(&doc).unwrap(),
            "workload: input 200 tokens, sessions of 5 turns, exponential:5s think time"
        );
        doc.sessions = Some(SessionsConfig { turns: "all".into(), think_time: "0s".into() });
        assert!(workload_line(&doc).unwrap().ends_with("sessions of each conversation's own turns, 0s think time"));
    }

    /// The summary tile's tok/s per MW (and the tables' whole numbers)
    /// group their thousands, as the rest of the page does.
    #[test]
    fn whole_numbers_group_their_thousands() {
        assert_eq!(grouped(Some(1_090_935.4)), "1,090,935");
        assert_eq!(grouped(Some(999.6)), "1,000");
        assert_eq!(grouped(Some(14.0)), "14");
        assert_eq!(grouped(None), "-");
        assert_eq!(grouped(Some(f64::NAN)), "-");
    }
}
