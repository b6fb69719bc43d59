//! Charts as inline SVG, drawn in Rust: the HTML report needs no script to
//! show them and tests can read every coordinate. Axes with "nice" ticks,
//! line/dot/bar series, labelled marks and guides; colours come from CSS
//! classes so the page's stylesheet (and dark mode) decides them.

use crate::escape::html;
use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 340.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 46.0;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    Line,
    Dots,
    LineDots,
    /// Bars from zero, each `width` x-units wide starting at its x.
    Bars {
        width: f64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub style: Style,
    /// Colour slot 0..=5, or [`Series::INK`].
    pub color: usize,
    pub points: Vec<(f64, f64)>,
    /// A tooltip per point (dots only).
    pub tips: Vec<String>,
    pub dashed: bool,
}

impl Series {
    /// The colour slot drawn in the page's ink rather than one of the six
    /// colours (a frontier through curves that take all six).
    pub const INK: usize = 6;

    /// The CSS colour class's number: the ink's, or one of the six.
    fn colour_class(&self) -> usize {
        if self.color == Series::INK {
            Series::INK
        } else {
            self.color % 6
        }
    }

    pub fn new(name: impl Into<String>, style: Style, color: usize, points: Vec<(f64, f64)>) -> Self {
        Series { name: name.into(), style, color, points, tips: Vec::new(), dashed: false }
    }
}

/// A labelled point drawn on top (saturation, recommended).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub x: f64,
    pub y: f64,
    pub label: String,
    /// CSS class of the ring (`mark-sat`, `mark-rec`).
    pub class: &'static str,
}

/// A vertical line at `x` (an SLO limit) or, with `horizontal`, at y = `x`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Guide {
    pub at: f64,
    pub label: String,
    pub horizontal: bool,
    /// A boundary (where a stage starts), not a limit: a muted line, its
    /// label at the top of the plot, right of it.
    pub boundary: bool,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Stable id: `data-chart` in the page, what the browser test looks for.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
    pub guides: Vec<Guide>,
    /// Shaded x ranges with a label (warm-up).
    pub bands: Vec<(f64, f64, String)>,
    /// Y values are shares 0..=1, labelled as percentages, axis fixed to 0..=100%.
    pub y_share: bool,
    /// A line under the chart (how it was computed, what is missing).
    pub note: Option<String>,
}

/// Tick positions covering [lo, hi] with a step of 1, 2 or 5 × 10ⁿ, about
/// `target` of them: of the steps near `span / target`, the one whose axis
/// runs least past the data (as a share of its span), a tick count far
/// from the target counting against it. A 61 s run ends its axis at 70 s,
/// not at 80 s.
///
/// ```
/// let (ticks, step) = goodput_report::svg::nice_ticks(0.0, 97.0, 5);
/// assert_eq!(step, 20.0);
/// assert_eq!(ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
/// let (ticks, step) = goodput_report::svg::nice_ticks(0.0, 61.0, 6);
/// assert_eq!((step, ticks.last().copied()), (10.0, Some(70.0)));
/// ```
pub fn nice_ticks(lo: f64, hi: f64, target: usize) -> (Vec<f64>, f64) {
    let span = (hi - lo).abs().max(f64::EPSILON);
    let (lo, hi) = (lo.min(hi), lo.max(hi));
    let want = target.max(1) as f64;
    let mag = 10f64.powf((span / want).log10().floor());
    let mut best: Option<(f64, f64)> = None;
    // From the widest step down: a narrower one must score strictly better,
    // so a tie keeps the fewer ticks.
    for m in [200.0, 100.0, 50.0, 20.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1] {
        let step = m * mag / 10.0;
        let n = (hi / step).ceil() - (lo / step).floor();
        if !(1.0..=2.0 * want).contains(&n) {
            continue;
        }
        let score = (n * step - span) / span + 0.1 * (n - want).abs() / want;
        if best.is_none_or(|(s, _)| score < s - 1e-9) {
            best = Some((score, step));
        }
    }
    let step = best.map_or(mag, |b| b.1);
    let first = (lo / step).floor();
    let last = (hi / step).ceil().max(first + 1.0);
    let ticks = (0..=((last - first) as usize)).map(|i| clean((first + i as f64) * step)).collect();
    (ticks, step)
}

/// Removes float dust (0.30000000000000004) from tick values.
fn clean(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

fn tick_label(v: f64, step: f64, share: bool) -> String {
    if share {
        return format!("{:.0}%", v * 100.0);
    }
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    if v.abs() >= 10_000.0 && decimals == 0 {
        let k = v / 1000.0;
        return if k.fract() == 0.0 { format!("{k:.0}k") } else { format!("{k:.1}k") };
    }
    format!("{v:.decimals$}")
}

/// Coordinates to two decimals: plenty for a 640-unit canvas, and stable
/// text for tests.
fn c(v: f64) -> String {
    let r = (v * 100.0).round() / 100.0;
    if r == r.trunc() {
        format!("{r:.0}")
    } else {
        format!("{r}")
    }
}

impl Chart {
    fn finite_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.series.iter().flat_map(|s| s.points.iter().copied()).filter(|(x, y)| x.is_finite() && y.is_finite())
    }

    /// How many data points the chart draws (what `data-points` says).
    pub fn point_count(&self) -> usize {
        self.finite_points().count()
    }

    fn domain(&self) -> ((f64, f64), (f64, f64)) {
        let mut xs: Vec<f64> = self.finite_points().map(|p| p.0).collect();
        let mut ys: Vec<f64> = self.finite_points().map(|p| p.1).collect();
        for s in &self.series {
            if let Style::Bars { width } = s.style {
                xs.extend(s.points.iter().map(|p| p.0 + width).filter(|x| x.is_finite()));
            }
        }
        xs.extend(self.marks.iter().map(|m| m.x));
        ys.extend(self.marks.iter().map(|m| m.y));
        for g in &self.guides {
            if g.horizontal {
                ys.push(g.at);
            } else {
                xs.push(g.at);
            }
        }
        let range = |v: &[f64]| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if !lo.is_finite() {
                (0.0, 1.0)
            } else if hi - lo < 1e-12 {
                let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
                (lo - pad, hi + pad)
            } else {
                (lo, hi)
            }
        };
        let (mut x0, x1) = range(&xs);
        let (mut y0, y1) = range(&ys);
        // Quantities on these charts are never negative; starting at zero
        // keeps differences honest.
        if x0 > 0.0 && x0 < (x1 - x0) * 0.5 {
            x0 = 0.0;
        }
        if y0 >= 0.0 {
            y0 = 0.0;
        }
        if self.y_share {
            return ((x0, x1), (0.0, 1.0));
        }
        ((x0, x1), (y0, y1))
    }

    /// The chart as a `<figure>` holding its title, the SVG, a legend and
    /// the note.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let n = self.point_count();
        let _ = write!(
            o,
            r#"<figure class="chart{}" id="chart-{id}" data-chart="{id}" data-points="{n}"><figcaption>{}</figcaption>"#,
            if n == 0 { " empty" } else { "" },
            html(&self.title),
            id = html(&self.id),
        );
        if n == 0 {
            let _ = write!(o, r#"<p class="nodata">No data to draw.</p>"#);
        } else {
            self.svg(&mut o);
            o.push_str(r#"<div class="legend">"#);
            for s in &self.series {
                let _ = write!(o, r#"<span><i class="sw c{}"></i>{}</span>"#, s.colour_class(), html(&s.name));
            }
            for m in &self.marks {
                let _ = write!(o, r#"<span><i class="sw ring {}"></i>{}</span>"#, m.class, html(&m.label));
            }
            o.push_str("</div>");
        }
        if let Some(note) = &self.note {
            let _ = write!(o, r#"<p class="note">{}</p>"#, html(note));
        }
        o.push_str("</figure>");
        o
    }

    fn svg(&self, o: &mut String) {
        let ((x0, x1), (y0, y1)) = self.domain();
        let (xt, xstep) = nice_ticks(x0, x1, 6);
        let (yt, ystep) = if self.y_share { nice_ticks(0.0, 1.0, 5) } else { nice_ticks(y0, y1, 5) };
        let (x0, x1) = (xt[0].min(x0), xt[xt.len() - 1].max(x1));
        let (y0, y1) = (yt[0].min(y0), yt[yt.len() - 1].max(y1));
        let f = Frame { x0, x1, y0, y1, pw: W - LEFT - RIGHT, ph: H - TOP - BOTTOM };
        let _ = write!(
            o,
            r#"<svg viewBox="0 0 {W} {H}" role="img" aria-label="{}" preserveAspectRatio="xMidYMid meet">"#,
            html(&self.title)
        );
        self.bands_svg(o, &f);
        self.axes_svg(o, &f, (&xt, xstep), (&yt, ystep));
        let _ = write!(o, r#"<g class="plot">"#);
        for (i, s) in self.series.iter().enumerate() {
            series_svg(o, &f, i, s);
        }
        self.guides_svg(o, &f);
        self.marks_svg(o, &f);
        o.push_str("</g></svg>");
    }

    /// Shaded spans of x (the warm-up), each with its label.
    fn bands_svg(&self, o: &mut String, f: &Frame) {
        for (a, b, label) in &self.bands {
            let (a, b) = (f.sx(a.max(f.x0)), f.sx(b.min(f.x1)));
            if b > a {
                let _ = write!(
                    o,
                    r#"<rect class="band" x="{}" y="{}" width="{}" height="{}"/><text class="band-label" x="{}" y="{}">{}</text>"#,
                    c(a),
                    c(TOP),
                    c(b - a),
                    c(f.ph),
                    c(a + 3.0),
                    c(TOP + 11.0),
                    html(label)
                );
            }
        }
    }

    /// The grid, the axes, their ticks and labels.
    fn axes_svg(&self, o: &mut String, f: &Frame, (xt, xstep): (&[f64], f64), (yt, ystep): (&[f64], f64)) {
        o.push_str(r#"<g class="grid">"#);
        for &t in yt {
            let _ = write!(o, r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}"/>"#, c(LEFT), c(LEFT + f.pw), y = c(f.sy(t)));
        }
        for &t in xt {
            let _ = write!(o, r#"<line y1="{}" y2="{}" x1="{x}" x2="{x}"/>"#, c(TOP), c(TOP + f.ph), x = c(f.sx(t)));
        }
        o.push_str("</g><g class=\"axis\">");
        let _ = write!(
            o,
            r#"<line x1="{l}" x2="{l}" y1="{t}" y2="{b}"/><line x1="{l}" x2="{r}" y1="{b}" y2="{b}"/>"#,
            l = c(LEFT),
            r = c(LEFT + f.pw),
            t = c(TOP),
            b = c(TOP + f.ph)
        );
        for &t in yt {
            let _ = write!(
                o,
                r#"<text class="yt" x="{}" y="{}">{}</text>"#,
                c(LEFT - 6.0),
                c(f.sy(t) + 3.5),
                tick_label(t, ystep, self.y_share)
            );
        }
        for &t in xt {
            let _ = write!(
                o,
                r#"<text class="xt" x="{}" y="{}">{}</text>"#,
                c(f.sx(t)),
                c(TOP + f.ph + 15.0),
                tick_label(t, xstep, false)
            );
        }
        let _ = write!(
            o,
            r#"<text class="xl" x="{}" y="{}">{}</text><text class="yl" transform="translate(14 {}) rotate(-90)">{}</text></g>"#,
            c(LEFT + f.pw / 2.0),
            c(H - 8.0),
            html(&self.x_label),
            c(TOP + f.ph / 2.0),
            html(&self.y_label)
        );
    }

    /// Limit and objective lines, across or along the plot, and boundaries.
    fn guides_svg(&self, o: &mut String, f: &Frame) {
        // Boundaries label the top line of the plot: a limit's label that
        // would fall there goes under its line instead.
        let top_taken = self.guides.iter().any(|g| g.boundary && !g.horizontal);
        // Limits along the plot label its foot, each a line above the one
        // before: a limit and an objective close together stay readable.
        let mut foot = 0.0;
        for g in &self.guides {
            if g.horizontal {
                let above = f.sy(g.at) - 4.0;
                let label_y = if top_taken && above - 11.0 < TOP + 14.0 {
                    (f.sy(g.at) + 12.0).max(TOP + 14.0 + 11.0)
                } else {
                    above
                };
                let y = c(f.sy(g.at));
                let _ = write!(
                    o,
                    r#"<line class="guide" x1="{}" x2="{}" y1="{y}" y2="{y}"/><text class="guide-label" text-anchor="start" x="{}" y="{}">{}</text>"#,
                    c(LEFT),
                    c(LEFT + f.pw),
                    // At the left end: latency curves climb at the right.
                    c(LEFT + 4.0),
                    c(label_y),
                    html(&g.label)
                );
            } else if g.boundary {
                let x = c(f.sx(g.at));
                let _ = write!(
                    o,
                    r#"<line class="guide boundary" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="guide-label boundary" text-anchor="start" x="{}" y="{}">{}</text>"#,
                    c(TOP),
                    c(TOP + f.ph),
                    c(f.sx(g.at) + 4.0),
                    c(TOP + 11.0),
                    html(&g.label)
                );
            } else {
                let x = f.sx(g.at);
                let anchor = if x > LEFT + f.pw * 0.8 { "end" } else { "start" };
                let dx = if anchor == "end" { -4.0 } else { 4.0 };
                let _ = write!(
                    o,
                    r#"<line class="guide" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="guide-label" text-anchor="{anchor}" x="{}" y="{}">{}</text>"#,
                    c(TOP),
                    c(TOP + f.ph),
                    c(x + dx),
                    c(TOP + f.ph - 6.0 - foot),
                    html(&g.label),
                    x = c(x)
                );
                foot += LINE_PX;
            }
        }
    }

    /// Ringed points with their labels, each label placed where it covers
    /// neither a ring (its own point's or another's: a saturation label
    /// once hid the recommended point beside it) nor a label placed before
    /// it: beside its point, right or left, then a line higher at a time,
    /// then below. The recommended mark (`mark-rec`) takes its place first
    /// and is drawn last, over the others. A label with no free place (a
    /// crowded chart, as a plan's frontier of many configurations can be)
    /// is left off rather than written over another: its ring keeps the
    /// label as its tooltip, and the page's table lists every configuration.
    fn marks_svg(&self, o: &mut String, f: &Frame) {
        let rings: Vec<Rect> = self.marks.iter().map(|m| Rect::ring(f.sx(m.x), f.sy(m.y))).collect();
        let mut order: Vec<usize> = (0..self.marks.len()).collect();
        order.sort_by_key(|&i| self.marks[i].class != "mark-rec");
        let mut placed: Vec<Rect> = Vec::new();
        // Each label's box, where it has one; its text starts at the box's left.
        let mut places: Vec<Option<Rect>> = vec![None; self.marks.len()];
        for &i in &order {
            let m = &self.marks[i];
            let (x, y) = (f.sx(m.x), f.sy(m.y));
            let width = LABEL_CHAR_PX * m.label.chars().count() as f64;
            let right_first = x <= LEFT + f.pw * 0.7;
            let at = |right: bool, base: f64| {
                let left = if right { x + LABEL_GAP } else { x - LABEL_GAP - width };
                Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT }
            };
            let fits = |r: &Rect| {
                r.left >= LEFT
                    && r.right <= W
                    && r.top >= TOP - 2.0
                    && r.bottom <= TOP + f.ph
                    && !rings.iter().chain(&placed).any(|o| o.crosses(r))
            };
            let above = (0..=8).map(|k| y - 10.0 - LINE_PX * k as f64);
            let below = (0..=4).map(|k| y + 20.0 + LINE_PX * k as f64);
            let mut found =
                above.chain(below).flat_map(|base| [at(right_first, base), at(!right_first, base)]).find(|r| fits(r));
            if m.class == "mark-rec" {
                // The recommended mark is labelled wherever it must be: a
                // line above or below its point, slid along to lie inside
                // the plot, else beside its point over whatever is there.
                let slid = |base: f64| {
                    let left = (x - width / 2.0).clamp(LEFT, (W - width).max(LEFT));
                    Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT }
                };
                let above = (1..=12).map(|k| y - 10.0 - LINE_PX * k as f64);
                let below = (0..=8).map(|k| y + 20.0 + LINE_PX * k as f64);
                found = found
                    .or_else(|| above.chain(below).map(slid).find(|r| fits(r)))
                    .or_else(|| Some(at(right_first, (y - 10.0).max(TOP + 10.0))));
            }
            if let Some(r) = found {
                placed.push(r);
            }
            places[i] = found;
        }
        let draw = (0..self.marks.len()).filter(|&i| self.marks[i].class != "mark-rec");
        for i in draw.chain((0..self.marks.len()).filter(|&i| self.marks[i].class == "mark-rec")) {
            let m = &self.marks[i];
            let (x, y) = (f.sx(m.x), f.sy(m.y));
            let t = html(&m.label);
            let _ = write!(
                o,
                r#"<g class="mark {cls}"><circle cx="{}" cy="{}" r="{MARK_R}"><title>{t}</title></circle>"#,
                c(x),
                c(y),
                cls = m.class,
            );
            if let Some(r) = places[i] {
                let _ = write!(o, r#"<text x="{}" y="{}">{t}</text>"#, c(r.left), c(r.bottom - LABEL_DESCENT));
            }
            o.push_str("</g>");
        }
    }
}

/// A box on the canvas: a mark's ring or a label's text.
#[derive(Debug, Clone, Copy)]
struct Rect {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Rect {
    /// The box a ring of [`MARK_R`] at (x, y) covers, its stroke included.
    fn ring(x: f64, y: f64) -> Rect {
        let r = MARK_R + 1.5;
        Rect { left: x - r, right: x + r, top: y - r, bottom: y + r }
    }

    fn crosses(&self, o: &Rect) -> bool {
        self.left < o.right && o.left < self.right && self.top < o.bottom && o.top < self.bottom
    }
}

/// The plot area inside the margins, and the scales from data to it.
struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
    /// Width and height of the plot area.
    pw: f64,
    ph: f64,
}

impl Frame {
    fn sx(&self, x: f64) -> f64 {
        LEFT + (x - self.x0) / (self.x1 - self.x0) * self.pw
    }

    fn sy(&self, y: f64) -> f64 {
        TOP + self.ph - (y - self.y0) / (self.y1 - self.y0) * self.ph
    }
}

/// One series: bars, a line, dots, or a line with dots; the points that
/// are not finite are left out, and a series with none draws nothing.
fn series_svg(o: &mut String, f: &Frame, i: usize, s: &Series) {
    let pts: Vec<(f64, f64)> = s.points.iter().copied().filter(|(x, y)| x.is_finite() && y.is_finite()).collect();
    if pts.is_empty() {
        return;
    }
    let cls = format!("c{}{}", s.colour_class(), if s.dashed { " dashed" } else { "" });
    let _ = write!(o, r#"<g class="series" data-series="{i}" data-n="{}">"#, pts.len());
    match s.style {
        Style::Bars { width } => {
            let bw = (f.sx(f.x0 + width) - f.sx(f.x0) - 1.0).max(1.0);
            for &(x, y) in &pts {
                let (top, base) = (f.sy(y.max(f.y0)), f.sy(0f64.max(f.y0)));
                let _ = write!(
                    o,
                    r#"<rect class="bar {cls}" x="{}" y="{}" width="{}" height="{}"/>"#,
                    c(f.sx(x) + 0.5),
                    c(top.min(base)),
                    c(bw),
                    c((base - top).abs())
                );
            }
        }
        Style::Line | Style::LineDots | Style::Dots => {
            if s.style != Style::Dots {
                let coords: Vec<String> = pts.iter().map(|&(x, y)| format!("{},{}", c(f.sx(x)), c(f.sy(y)))).collect();
                let _ = write!(o, r#"<polyline class="line {cls}" points="{}"/>"#, coords.join(" "));
            }
            if s.style != Style::Line {
                let r = if s.style == Style::Dots && pts.len() > 500 { 1.6 } else { 3.0 };
                for (k, &(x, y)) in pts.iter().enumerate() {
                    let _ = write!(o, r#"<circle class="pt {cls}" cx="{}" cy="{}" r="{r}">"#, c(f.sx(x)), c(f.sy(y)));
                    if let Some(t) = s.tips.get(k) {
                        let _ = write!(o, "<title>{}</title>", html(t));
                    }
                    o.push_str("</circle>");
                }
            }
        }
    }
    o.push_str("</g>");
}

/// A mark label's line height and the width of one of its characters
/// (11.5 px bold sans-serif, a little generous), in px; how far its text
/// rises above its baseline and falls below it; how far it starts from its
/// point; the radius of a mark's ring.
const LINE_PX: f64 = 14.0;
/// A label character's width at the marks' 11.5 px, weight 650: Chromium's
/// sans-serif measured 7.10–7.28 (`getComputedTextLength`) over a plan's
/// configuration names.
const LABEL_CHAR_PX: f64 = 7.4;
const LABEL_ASCENT: f64 = 10.5;
const LABEL_DESCENT: f64 = 3.0;
const LABEL_GAP: f64 = 10.0;
const MARK_R: f64 = 8.0;

/// Points of a step function: each value holds until the next x, the last
/// for `last_width`.
pub fn steps(points: &[(f64, f64)], last_width: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(points.len() * 2);
    for (i, &(x, y)) in points.iter().enumerate() {
        let next = points.get(i + 1).map_or(x + last_width, |p| p.0);
        out.push((x, y));
        out.push((next, y));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_cover_the_range_with_round_steps() {
        for (lo, hi) in [(0.0, 1.0), (50.4, 52.4), (0.0, 1010.9), (2.44, 2.53), (0.0, 1e6), (-3.0, 7.0)] {
            let (t, step) = nice_ticks(lo, hi, 6);
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            let m = step / 10f64.powf(step.log10().floor());
            assert!([1.0, 2.0, 5.0, 10.0].iter().any(|x| (x - m).abs() < 1e-9), "{step}");
            assert!(t.len() <= 14, "{t:?}");
        }
        assert_eq!(tick_label(0.30000000000000004, 0.1, false), "0.3");
        assert_eq!(tick_label(20_000.0, 5000.0, false), "20k");
        assert_eq!(tick_label(0.5, 0.1, true), "50%");
    }

    #[test]
    fn drops_non_finite_points_and_counts_the_rest() {
        let chart = Chart {
            id: "t".into(),
            title: "<t>".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 1.0), (f64::NAN, 2.0), (2.0, 3.0)])],
            ..Default::default()
        };
        let svg = chart.render();
        assert_eq!(chart.point_count(), 2);
        assert!(svg.contains(r#"data-points="2""#));
        assert!(svg.contains(r#"data-n="2""#));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains("&lt;t&gt;") && !svg.contains("<t>"));
    }

    #[test]
    fn empty_chart_says_so() {
        let chart = Chart { id: "e".into(), title: "E".into(), ..Default::default() };
        let html = chart.render();
        assert!(html.contains(r#"data-points="0""#) && html.contains("No data"));
    }

    /// Each mark's ring and label boxes, read back from the SVG's own
    /// coordinates: (ring, label, if drawn).
    fn mark_boxes(svg: &str) -> Vec<(Rect, Option<Rect>)> {
        let attr = |tag: &str, k: &str| -> f64 {
            tag.split(&format!(" {k}=\"")).nth(1).unwrap().split('"').next().unwrap().parse().unwrap()
        };
        svg.split(r#"<g class="mark "#)
            .skip(1)
            .map(|g| {
                let g = g.split("</g>").next().unwrap();
                let circle = g.split("<circle").nth(1).unwrap();
                let ring = Rect::ring(attr(circle, "cx"), attr(circle, "cy"));
                let label = g.split("<text").nth(1).map(|text| {
                    let label = text.split('>').nth(1).unwrap().split('<').next().unwrap();
                    // Every label's text starts at its box's left.
                    let (left, base) = (attr(text, "x"), attr(text, "y"));
                    let width = LABEL_CHAR_PX * label.chars().count() as f64;
                    Rect { left, right: left + width, top: base - LABEL_ASCENT, bottom: base + LABEL_DESCENT }
                });
                (ring, label)
            })
            .collect()
    }

    /// No label covers a ring, and no two labels cross; every label drawn.
    fn assert_labels_clear(svg: &str) {
        let boxes = mark_boxes(svg);
        assert!(boxes.len() >= 2 && boxes.iter().all(|b| b.1.is_some()), "{svg}");
        assert_drawn_labels_clear(&boxes);
    }

    fn assert_drawn_labels_clear(boxes: &[(Rect, Option<Rect>)]) {
        for (i, (_, label)) in boxes.iter().enumerate() {
            let Some(label) = label else { continue };
            for (j, (ring, other)) in boxes.iter().enumerate() {
                assert!(!label.crosses(ring), "label {i} {label:?} covers ring {j} {ring:?}");
                assert!(i == j || other.is_none_or(|o| !label.crosses(&o)), "labels {i} and {j} cross");
            }
        }
    }

    /// A plan's crowded frontier: thirty marks along a short stretch. No
    /// drawn label crosses another or covers a ring; those with no room
    /// are left off (their rings keep them as tooltips); the recommended
    /// mark's is drawn whatever the crowd, on top.
    #[test]
    fn a_crowded_chart_leaves_off_the_labels_it_has_no_room_for() {
        let mut marks: Vec<Mark> = (0..30)
            .map(|i| mark(40.0 + i as f64, 50.0 + (i % 3) as f64, "h200 tp1x1 fp8 mbt8192 pd3:1xTP4", "mark-sat"))
            .collect();
        marks.push(mark(55.0, 51.0, "best: h100 tp1x1 pp2 fp8 mbt8192 pd2:1xTP2", "mark-rec"));
        let chart = Chart {
            id: "crowd".into(),
            title: "Crowd".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 0.0), (100.0, 100.0)])],
            marks,
            ..Default::default()
        };
        let svg = chart.render();
        let boxes = mark_boxes(&svg);
        assert_eq!(boxes.len(), 31);
        let drawn = boxes.iter().filter(|b| b.1.is_some()).count();
        assert!(drawn > 1 && drawn < 31, "{drawn} labels drawn");
        assert_drawn_labels_clear(&boxes);
        assert_eq!(svg.matches("<title>").count(), 31);
        // The recommended mark is drawn last, with its label.
        let last = svg.rsplit(r#"<g class="mark "#).next().unwrap();
        assert!(last.starts_with("mark-rec") && last.contains("<text"), "{last}");
    }

    fn mark(x: f64, y: f64, label: &str, class: &'static str) -> Mark {
        Mark { x, y, label: label.into(), class }
    }

    /// Two marks whose labels would fall on one line (the second a little
    /// left of and below the first, as a sweep's recommended point often is
    /// beside its saturation) each get a place of their own.
    #[test]
    fn mark_labels_near_each_other_take_separate_places() {
        let chart = Chart {
            id: "m".into(),
            title: "M".into(),
            series: vec![Series::new("s", Style::LineDots, 0, vec![(0.0, 0.0), (100.0, 100.0)])],
            marks: vec![
                mark(40.0, 50.0, "saturation: concurrency 88", "mark-sat"),
                mark(38.0, 45.0, "recommended: concurrency 64", "mark-rec"),
            ],
            ..Default::default()
        };
        assert_labels_clear(&chart.render());
    }

    /// The sweep of issue 36: the saturation's label, written rightwards
    /// from its point, ran over the recommended point's ring a little to
    /// the right of it and a little higher.
    #[test]
    fn a_mark_label_does_not_cover_the_ring_beside_it() {
        let chart = Chart {
            id: "sat".into(),
            title: "Throughput vs TTFT".into(),
            series: vec![Series::new(
                "TTFT p50",
                Style::LineDots,
                0,
                vec![(120.0, 23.7), (4891.9, 34.0), (6298.1, 37.8), (8352.7, 55.2), (8884.8, 648.9)],
            )],
            marks: vec![
                mark(6298.1, 37.8, "saturation: 50.659 req/s", "mark-sat"),
                mark(8352.7, 55.2, "recommended: 65.575 req/s", "mark-rec"),
            ],
            ..Default::default()
        };
        assert_labels_clear(&chart.render());
    }

    #[test]
    fn steps_hold_each_value() {
        assert_eq!(steps(&[(0.0, 1.0), (1.0, 2.0)], 1.0), vec![(0.0, 1.0), (1.0, 1.0), (1.0, 2.0), (2.0, 2.0)]);
    }
}
